/// Where the controller is: one syntax for every transport.
///
///     hci0                      Linux HCI user channel of adapter 0
///     tcp:HOST:PORT             H4 over TCP (HOST may be [IPv6])
///     unix:PATH                 H4 over a Unix stream socket
///     serial:/dev/ttyACM0[:baud] H4 over a serial port or pty (default 115200 baud)
public enum TransportAddress: Equatable, Hashable, Sendable, CustomStringConvertible {
    case hci(index: UInt16)
    case tcp(host: String, port: UInt16)
    case unix(path: String)
    case serial(path: String, baud: Int)

    public static let defaultBaud = 115_200
    /// Rates a Linux termios can set.
    public static let baudRates: Set<Int> = [9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 500_000, 576_000, 921_600,
                                             1_000_000, 1_152_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000]
    /// sun_path holds 108 bytes including the terminating NUL.
    public static let maxUnixPathBytes = 107

    public init(parsing text: String) throws(TransportAddressError) {
        let syntax = "expected hci<N>, bluez[:hci<N>], tcp:HOST:PORT, unix:PATH or serial:PATH[:BAUD]"
        if text.hasPrefix("hci") {
            let digits = text.dropFirst(3)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let index = UInt16(digits) else {
                throw TransportAddressError(text, "adapter index after 'hci' must be a number 0...65535 (\(syntax))")
            }
            self = .hci(index: index)
            return
        }
        guard let colon = text.firstIndex(of: ":") else { throw TransportAddressError(text, syntax) }
        let scheme = text[..<colon], rest = String(text[text.index(after: colon)...])
        switch scheme {
        case "tcp":
            guard let last = rest.lastIndex(of: ":") else { throw TransportAddressError(text, "missing port (tcp:HOST:PORT)") }
            var host = String(rest[..<last])
            let portText = rest[rest.index(after: last)...]
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw TransportAddressError(text, "missing host (tcp:HOST:PORT)") }
            guard host.contains(":") == rest[..<last].hasPrefix("[") else {
                throw TransportAddressError(text, "IPv6 hosts go in brackets (tcp:[::1]:PORT)")
            }
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portText), port > 0 else {
                throw TransportAddressError(text, "port must be a number 1...65535")
            }
            self = .tcp(host: host, port: port)
        case "unix":
            guard !rest.isEmpty else { throw TransportAddressError(text, "missing socket path (unix:PATH)") }
            guard rest.utf8.count <= Self.maxUnixPathBytes else {
                throw TransportAddressError(text, "socket path longer than \(Self.maxUnixPathBytes) bytes")
            }
            self = .unix(path: rest)
        case "serial":
            var path = rest, baud = Self.defaultBaud
            // A last ':' followed by digits is the baud rate; other colons belong to the path
            // (/dev/serial/by-path names contain them).
            if let last = rest.lastIndex(of: ":"),
               case let tail = rest[rest.index(after: last)...], !tail.isEmpty, tail.allSatisfy({ $0.isASCII && $0.isNumber }) {
                guard let rate = Int(tail), Self.baudRates.contains(rate) else {
                    throw TransportAddressError(text, "unsupported baud rate \(tail) (for example 115200, 921600, 1000000, 3000000)")
                }
                path = String(rest[..<last])
                baud = rate
            }
            guard path.hasPrefix("/") else { throw TransportAddressError(text, "serial device must be an absolute path (serial:/dev/ttyACM0)") }
            self = .serial(path: path, baud: baud)
        default:
            throw TransportAddressError(text, "unknown transport '\(scheme)' (\(syntax))")
        }
    }

    public var description: String {
        switch self {
        case .hci(let index): "hci\(index)"
        case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        case .serial(let path, let baud): baud == Self.defaultBaud ? "serial:\(path)" : "serial:\(path):\(baud)"
        }
    }
}

public struct TransportAddressError: Error, Equatable, Sendable, CustomStringConvertible {
    public var input: String
    public var message: String
    public init(_ input: String, _ message: String) {
        self.input = input
        self.message = message
    }
    public var description: String { "invalid transport address '\(input)': \(message)" }
}
