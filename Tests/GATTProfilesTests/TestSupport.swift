import TestSupport
import Testing
@testable import GATTProfiles

/// Builds a characteristic value field by field from the specification's layout, remembering where
/// each field starts so truncation errors can be checked against it.
struct SpecBytes {
    var bytes: [UInt8] = []
    var fields: [(start: Int, end: Int)] = []

    mutating func raw(_ b: [UInt8]) {
        fields.append((bytes.count, bytes.count + b.count))
        bytes += b
    }
    mutating func u8(_ v: UInt8) { raw([v]) }
    mutating func u16(_ v: UInt16) { raw([UInt8(v & 0xFF), UInt8(v >> 8)]) }
    mutating func s16(_ v: Int16) { u16(UInt16(bitPattern: v)) }
    mutating func u24(_ v: UInt32) { raw([UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF)]) }
    mutating func u32(_ v: UInt32) { raw([UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)]) }
    mutating func dateTime(_ d: GATTDateTime) {
        raw([UInt8(d.year & 0xFF), UInt8(d.year >> 8), d.month, d.day, d.hours, d.minutes, d.seconds])
    }

    /// The field that a value cut to `length` bytes ends inside.
    func fieldStart(cutAt length: Int) -> Int? {
        fields.first { $0.start <= length && length < $0.end }?.start
    }
}

extension RandomNumberGenerator {
    mutating func u8() -> UInt8 { UInt8.random(in: .min ... .max, using: &self) }
    mutating func u16(below limit: UInt16 = .max) -> UInt16 { UInt16.random(in: 0..<limit, using: &self) }
    mutating func s16() -> Int16 { Int16.random(in: -32768...32766, using: &self) }
    mutating func u24() -> UInt32 { UInt32.random(in: 0...0xFF_FFFF, using: &self) }
    mutating func u32() -> UInt32 { UInt32.random(in: .min ... .max, using: &self) }
    mutating func dateTime() -> GATTDateTime {
        GATTDateTime(year: UInt16.random(in: 1990...2100, using: &self), month: UInt8.random(in: 1...12, using: &self),
                     day: UInt8.random(in: 1...28, using: &self), hours: UInt8.random(in: 0...23, using: &self),
                     minutes: UInt8.random(in: 0...59, using: &self), seconds: UInt8.random(in: 0...59, using: &self))
    }
    /// An SFLOAT bit pattern (any, including special values) and its expected decoding.
    mutating func sfloat() -> (UInt16, MedicalFloat) {
        let raw = UInt16.random(in: .min ... .max, using: &self)
        return (raw, MedicalFloat(sfloat: raw))
    }
    mutating func trailing() -> [UInt8] { (0..<Int.random(in: 0...2, using: &self)).map { _ in u8() } }
}

/// Every proper prefix of `value` must throw a truncation error at the start of the cut field.
func expectTruncations<T>(_ value: SpecBytes, characteristic: UInt16,
                          sourceLocation: SourceLocation = #_sourceLocation,
                          _ decode: ([UInt8]) throws(ProfileDecodeError) -> T) {
    for length in 0..<value.bytes.count {
        do {
            _ = try decode(Array(value.bytes[..<length]))
            Issue.record("a \(length)-byte prefix of \(value.bytes) decoded", sourceLocation: sourceLocation)
            return
        } catch {
            guard error.characteristic == characteristic, error.offset == value.fieldStart(cutAt: length),
                  case .truncated = error.reason else {
                Issue.record("prefix \(length) of \(value.bytes): \(error)", sourceLocation: sourceLocation)
                return
            }
        }
    }
}
