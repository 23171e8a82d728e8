/// Why a capture file or a record in it could not be read: which format, where, and why.
///
/// `offset` is a byte offset in the file for the pcap and pcapng structure, and a byte offset in
/// the record's data for a usbmon header (`USBMonPacket`).
public struct CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Format: String, Hashable, Sendable {
        case pcap, pcapng, usbmon
    }

    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        /// The file starts with neither a pcap nor a pcapng magic number.
        case notACapture
        /// `field` needs `needed` bytes but only `available` are left.
        case truncated(field: String, needed: Int, available: Int)
        /// A field holds a value the format does not allow.
        case invalidValue(field: String, value: Int)
        /// A length exceeds an explicit limit of this reader.
        case tooLong(field: String, length: Int, limit: Int)
        /// A version this reader does not know (pcap 2.x and pcapng 1.x are read).
        case unsupportedVersion(major: Int, minor: Int)
        /// A pcapng block's trailing total length differs from its leading one.
        case blockLengthMismatch(leading: Int, trailing: Int)
        /// A pcapng packet block names an interface its section did not describe.
        case unknownInterface(Int)

        public var description: String {
            switch self {
            case .notACapture:
                "no pcap or pcapng magic number"
            case .truncated(let field, let needed, let available):
                "\(field) truncated: needs \(needed) bytes, \(available) available"
            case .invalidValue(let field, let value):
                "invalid \(field) \(value)"
            case .tooLong(let field, let length, let limit):
                "\(field) \(length) exceeds the limit \(limit)"
            case .unsupportedVersion(let major, let minor):
                "unsupported version \(major).\(minor)"
            case .blockLengthMismatch(let leading, let trailing):
                "block total length \(leading) at the start but \(trailing) at the end"
            case .unknownInterface(let index):
                "packet of interface \(index), which the section does not describe"
            }
        }
    }

    public var format: Format
    public var offset: Int
    public var reason: Reason

    public init(_ format: Format, offset: Int, _ reason: Reason) {
        self.format = format
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(format.rawValue) at offset \(offset): \(reason)" }
}
