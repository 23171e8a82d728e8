public import Foundation

/// What a full decode saw: enough to prove every field was decoded (for benchmarks and `inspect --count`).
public struct FITDecodeSummary: Sendable, Equatable {
    /// FIT files in the input (more than one when chained).
    public var files = 0
    public var definitionMessages = 0
    public var dataMessages = 0
    /// Decoded fields, including component and developer fields.
    public var fields = 0
    /// Decoded elements (an array field counts each element; strings count one).
    public var values = 0
    /// Sum of every finite decoded value, so the work cannot be optimized away.
    public var checksum: Double = 0

    public init() {}
}

extension FITDecoder {
    /// Decodes every field of every message (scale, offset, components, developer fields) and
    /// counts them. Throws ``DriverKit/DecodeError`` on damage.
    public static func decodeAll(_ data: Data) throws -> FITDecodeSummary {
        var counter = SummaryVisitor()
        try decode(data, into: &counter)
        return counter.summary
    }

    struct SummaryVisitor: FITVisitor {
        var summary = FITDecodeSummary()
        var wantsDefinitions: Bool { true }

        mutating func fileHeader(_ header: FITFileHeader) throws { summary.files += 1 }
        mutating func definition(_ definition: FITDefinition) throws { summary.definitionMessages += 1 }
        mutating func message(_ message: FITMessage) throws {
            summary.dataMessages += 1
            summary.fields += message.fieldCount
            var sum = 0.0
            var values = 0
            let fields = message.fieldPointer
            let elements = message.valuePointer
            for i in 0..<message.fieldCount {
                let start = Int(fields[i].valueStart)
                let count = Int(fields[i].valueCount)
                if count == 1 {
                    // Scalars, the common case (same order of additions as the loop below).
                    values += 1
                    let v = elements[start]
                    if v.isFinite { sum += v }
                    continue
                }
                values += max(count, 1)
                for v in UnsafeBufferPointer(start: elements + start, count: count) where v.isFinite { sum += v }
            }
            summary.values += values
            summary.checksum += sum
        }
    }
}
