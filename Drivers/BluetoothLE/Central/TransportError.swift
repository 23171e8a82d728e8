/// Why a transport could not be opened or used; `message` starts with the transport's name.
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case unsupported, permissionDenied, notFound, busy, refused, timedOut, invalid, io, closed
    }
    public var kind: Kind
    public var message: String
    public var errno: Int32?

    public init(_ kind: Kind, _ message: String, errno: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.errno = errno
    }

    public var description: String { message }
}
