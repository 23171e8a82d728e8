/// The answer to an AUTHENTICATE command.
public enum ANTFSAuthResult: Hashable, Sendable, CustomStringConvertible {
    /// The normal answer to the serial number request.
    case notAvailable
    case accept
    case reject
    case other(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .notAvailable
        case 1: self = .accept
        case 2: self = .reject
        default: self = .other(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .notAvailable: 0
        case .accept: 1
        case .reject: 2
        case .other(let v): v
        }
    }

    public var description: String {
        switch self {
        case .notAvailable: "not available"
        case .accept: "accept"
        case .reject: "reject"
        case .other(let v): "result \(v)"
        }
    }
}

/// One block of a download: the reply `44 89 [result, 0, remaining LE32, offset LE32, file size
/// LE32]`, then `remaining` bytes of data padded to 8, then a last 8-byte packet whose last two
/// bytes are the CRC (LE16) of the file's bytes up to the end of this block (the CRC chained
/// from the request's seed).
public struct ANTFSDownloadResponse: Hashable, Sendable {
    /// The download response codes.
    public enum Result: Hashable, Sendable, CustomStringConvertible {
        case ok
        case doesNotExist
        case notReadable
        case notReady
        case invalidRequest
        /// The client's CRC of the bytes before the offset differs from the request's seed.
        case crcIncorrect
        case other(UInt8)

        public init(rawValue: UInt8) {
            switch rawValue {
            case 0: self = .ok
            case 1: self = .doesNotExist
            case 2: self = .notReadable
            case 3: self = .notReady
            case 4: self = .invalidRequest
            case 5: self = .crcIncorrect
            default: self = .other(rawValue)
            }
        }

        public var rawValue: UInt8 {
            switch self {
            case .ok: 0
            case .doesNotExist: 1
            case .notReadable: 2
            case .notReady: 3
            case .invalidRequest: 4
            case .crcIncorrect: 5
            case .other(let v): v
            }
        }

        public var description: String {
            switch self {
            case .ok: "OK"
            case .doesNotExist: "the file does not exist"
            case .notReadable: "the file is not readable"
            case .notReady: "not ready"
            case .invalidRequest: "invalid request"
            case .crcIncorrect: "the CRC seed is incorrect"
            case .other(let v): "response code \(v)"
            }
        }
    }

    /// OK, or why the watch refused.
    public var result: Result
    /// The length of this block's data.
    public var remaining: UInt32
    /// Where this block starts in the file.
    public var offset: UInt32
    /// The whole file's size.
    public var fileSize: UInt32
    /// The block's data (`remaining` bytes); empty when the result is not OK.
    public var data: [UInt8]
    /// The CRC the client computed; 0 when the result is not OK.
    public var crc: UInt16

    public init(result: Result, remaining: UInt32, offset: UInt32, fileSize: UInt32, data: [UInt8], crc: UInt16) {
        self.result = result
        self.remaining = remaining
        self.offset = offset
        self.fileSize = fileSize
        self.data = data
        self.crc = crc
    }
}

/// A response from an ANT-FS client, as it arrives: a reassembled burst that starts with the
/// client's beacon (8 bytes), then the response (`44 id …`).
public enum ANTFSResponse: Hashable, Sendable {
    /// `44 84 [result, data length, client serial LE32]` and the data: with the serial request
    /// the watch's name (e.g. "Forerunner 610"), with pairing the passkey to keep.
    case authenticate(result: ANTFSAuthResult, clientSerial: UInt32, data: [UInt8])
    /// `44 89`: one block of a download.
    case download(ANTFSDownloadResponse)
    /// Any other response (upload 0x8A, erase 0x8B, …): its ID and the bytes after it.
    case other(id: UInt8, bytes: [UInt8])

    /// Splits a burst from the client into its beacon and its response. Padding after the
    /// response is ignored; a length field that points past the end is an error, with the
    /// offset of the field's data in the burst.
    public static func decode(_ burst: [UInt8]) throws(ANTFSError) -> (beacon: ANTFSBeacon, response: ANTFSResponse) {
        let beacon = try ANTFSBeacon(burst)
        guard burst.count >= 16 else {
            throw .truncated(field: "response", offset: 8, needed: 8, available: burst.count - 8)
        }
        guard burst[8] == ANTFSCommand.marker else {
            throw .invalidValue(field: "response marker", offset: 8, value: Int(burst[8]))
        }
        switch burst[9] {
        case 0x84:
            let length = Int(burst[11])
            guard burst.count - 16 >= length else {
                throw .truncated(field: "authentication data", offset: 16, needed: length, available: burst.count - 16)
            }
            let response = ANTFSResponse.authenticate(
                result: ANTFSAuthResult(rawValue: burst[10]), clientSerial: burst.le32(at: 12), data: Array(burst[16..<(16 + length)]))
            return (beacon, response)
        case 0x89:
            guard burst.count >= 24 else {
                throw .truncated(field: "download response header", offset: 8, needed: 16, available: burst.count - 8)
            }
            let result = ANTFSDownloadResponse.Result(rawValue: burst[10])
            let remaining = burst.le32(at: 12)
            var block = ANTFSDownloadResponse(
                result: result, remaining: remaining, offset: burst.le32(at: 16), fileSize: burst.le32(at: 20), data: [], crc: 0)
            guard result == .ok else { return (beacon, .download(block)) }
            // The data, then the last 8-byte packet with the CRC: the data must end before it.
            let available = burst.count - 24
            guard UInt64(remaining) + 8 <= UInt64(available) else {
                throw .truncated(field: "download data and CRC", offset: 24, needed: Int(remaining) + 8, available: available)
            }
            block.data = Array(burst[24..<(24 + Int(remaining))])
            block.crc = burst.le16(at: burst.count - 2)
            return (beacon, .download(block))
        default:
            return (beacon, .other(id: burst[9], bytes: Array(burst[10...])))
        }
    }

    /// The response's bytes as a client sends them after its beacon (for simulated clients):
    /// an authentication response padded to 8, a download block's data padded and followed by
    /// the CRC packet, another response as it was decoded.
    public var bytes: [UInt8] {
        var out: [UInt8] = [ANTFSCommand.marker]
        switch self {
        case .authenticate(let result, let clientSerial, let data):
            let sent = data.prefix(255)
            out += [0x84, result.rawValue, UInt8(sent.count)]
            out.appendLE32(clientSerial)
            out += sent
            out.padToEight()
        case .download(let block):
            out += [0x89, block.result.rawValue, 0]
            out.appendLE32(block.remaining)
            out.appendLE32(block.offset)
            out.appendLE32(block.fileSize)
            if block.result == .ok {
                out += block.data
                out.padToEight()
                out += [0, 0, 0, 0, 0, 0]
                out.appendLE16(block.crc)
            }
        case .other(let id, let bytes):
            out += [id] + bytes  // as decoded: padding included
        }
        return out
    }
}
