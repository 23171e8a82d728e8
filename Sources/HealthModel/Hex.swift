/// Bytes as hexadecimal text: digests as stored (the import ledger's content hash, the server's
/// device-token hashes). SHA-256 itself comes from swift-crypto.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lower-case hex digits per byte, in order.
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
