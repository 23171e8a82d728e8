import Foundation

/// A TCP port on 127.0.0.1 that nothing listens on now, below the kernel's ephemeral range
/// (32768 and up), where the many client connections of concurrent tests take their ports. A
/// server that must bind the same port again after it is killed needs one: a port from that
/// range is taken by another test's connection meanwhile ("Address already in use"), as the
/// daemon's metrics endpoint and a restarted healthgate-server each were once.
public func unusedPort() throws -> Int {
    for _ in 0..<100 {
        let port = Int.random(in: 20_000...32_000)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { continue }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound == 0 { return port }
    }
    throw PeerError("no unused port in 20000...32000")
}
