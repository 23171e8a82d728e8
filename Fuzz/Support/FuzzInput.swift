/// A fuzz input: the bytes libFuzzer hands to `LLVMFuzzerTestOneInput`, read from the front.
///
/// Targets take a few leading bytes as choices (which decoder, how to split the rest into
/// chunks) and give the remainder to the decoder, so that every choice is reachable by mutation.
public struct FuzzInput {
    public private(set) var bytes: ArraySlice<UInt8>

    /// Copies the `size` bytes at `data` (nil when `size` is 0).
    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = size > 0 ? ArraySlice(UnsafeBufferPointer(start: data, count: size)) : []
    }

    public init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    /// The next byte, or 0 when the input is used up.
    public mutating func byte() -> UInt8 {
        bytes.popFirst() ?? 0
    }

    /// The next two bytes, little-endian (0 for missing bytes).
    public mutating func uint16() -> UInt16 {
        UInt16(byte()) | UInt16(byte()) << 8
    }

    /// The next `count` bytes (fewer when the input ends).
    public mutating func take(_ count: Int) -> [UInt8] {
        let n = min(count, bytes.count)
        let head = Array(bytes.prefix(n))
        bytes = bytes.dropFirst(n)
        return head
    }

    /// What is left.
    public var rest: [UInt8] { Array(bytes) }

    /// Splits what is left into chunks of `size` bytes (the last one shorter), as a stream
    /// would deliver it.
    public func chunks(of size: Int) -> [ArraySlice<UInt8>] {
        let size = max(1, size)
        return stride(from: bytes.startIndex, to: bytes.endIndex, by: size).map {
            bytes[$0..<min($0 + size, bytes.endIndex)]
        }
    }
}
