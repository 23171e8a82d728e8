/// Everything that can go wrong in this module: a payload that does not decode (with the offset
/// of the field in the bytes given), a download block that does not fit the file, and a session
/// that ends early. Nothing in this module traps on the bytes it is given.
public enum ANTFSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `field` at `offset` needs `needed` bytes, but only `available` are left.
    case truncated(field: String, offset: Int, needed: Int, available: Int)
    /// A field holds a value the format does not allow.
    case invalidValue(field: String, offset: Int, value: Int)
    /// A size beyond an explicit limit of this module; nothing was allocated for it.
    case tooLarge(field: String, size: Int, limit: Int)
    /// The watch answered a download request with another code than OK.
    case downloadRefused(index: UInt16, offset: UInt32, result: ANTFSDownloadResponse.Result)
    /// The CRC of the block at `offset` did not verify, `attempts` times in a row.
    case crcCheckFailed(index: UInt16, offset: UInt32, attempts: Int)
    /// A download block that does not fit the request or the file (another offset, a file size
    /// that changed, data past the end of the file, an empty block before the end).
    case inconsistentBlock(index: UInt16, offset: UInt32, reason: String)
    /// Nothing came while waiting for `waitingFor`, after `attempts` sends of the command
    /// (0 when nothing was sent: waiting for a beacon or for the caller).
    case timeout(waitingFor: String, attempts: Int)
    /// Sending `command` to the watch failed `attempts` times (the ANT stick reported a failed
    /// acknowledged or burst transfer each time).
    case transferFailed(command: String, attempts: Int)
    /// The watch answered the request for its serial number with a reject.
    case authenticationRejected(clientSerial: UInt32)
    /// No passkey is stored for this watch and pairing was not allowed.
    case notPaired(clientSerial: UInt32)
    /// The watch refused the stored passkey (it was reset, or paired with another host since).
    case passkeyRejected(clientSerial: UInt32)
    /// The watch refused pairing (declined on the watch, or pairing is off in its settings).
    case pairingRejected(clientSerial: UInt32)
    /// The watch answered with something this host did not ask for.
    case unexpectedResponse(String)

    public var description: String {
        switch self {
        case .truncated(let field, let offset, let needed, let available):
            return "\(field) at offset \(offset) truncated: needs \(needed) bytes, \(available) available"
        case .invalidValue(let field, let offset, let value):
            return "invalid \(field) \(value) at offset \(offset)"
        case .tooLarge(let field, let size, let limit):
            return "\(field) of \(size) bytes exceeds the limit of \(limit) bytes"
        case .downloadRefused(let index, let offset, let result):
            return "the watch refused to send file \(index) from offset \(offset): \(result)"
        case .crcCheckFailed(let index, let offset, let attempts):
            return "CRC check failed at offset \(offset) of file \(index) (\(attempts) attempts)"
        case .inconsistentBlock(let index, let offset, let reason):
            return "inconsistent block for file \(index) at offset \(offset): \(reason)"
        case .timeout(let what, let attempts):
            return "timed out waiting for \(what)" + (attempts > 0 ? " (\(attempts) attempts)" : "")
        case .transferFailed(let command, let attempts):
            return "sending \(command) to the watch failed \(attempts) times"
        case .authenticationRejected(let serial):
            return "the watch \(serial) refused to give its serial number"
        case .notPaired(let serial):
            return "the watch \(serial) is not paired with this host: run `healthgate ant download --pair`"
        case .passkeyRejected(let serial):
            return "the watch \(serial) refused the stored passkey (it was reset or paired with another host): "
                + "pair again with `healthgate ant download --pair`"
        case .pairingRejected(let serial):
            return "the watch \(serial) refused pairing (declined on the watch, or pairing is off in its settings)"
        case .unexpectedResponse(let text):
            return "unexpected answer from the watch: \(text)"
        }
    }
}

// Little-endian reads and writes. Callers check the length first.
extension Array where Element == UInt8 {
    func le16(at i: Int) -> UInt16 {
        UInt16(self[i]) | UInt16(self[i + 1]) << 8
    }

    func le32(at i: Int) -> UInt32 {
        UInt32(self[i]) | UInt32(self[i + 1]) << 8 | UInt32(self[i + 2]) << 16 | UInt32(self[i + 3]) << 24
    }

    mutating func appendLE16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }

    mutating func appendLE32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// Zeros up to the next multiple of 8 (ANT-FS commands go out in 8-byte packets).
    mutating func padToEight() {
        while count % 8 != 0 { append(0) }
    }
}
