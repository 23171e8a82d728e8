public import Foundation

/// Debian's pgbouncer in transaction mode in front of a test PostgreSQL (``PostgresCluster``), on
/// a free loopback port, in a folder of its own (as the user PostgreSQL runs as: pgbouncer too
/// refuses root). A server connection is lent to a client for one transaction at a time.
public final class PgBouncer: Sendable {
    public let folder: String
    public let port: Int
    let cluster: PostgresCluster

    public init(in postgres: PostgresCluster, poolSize: Int = 10) throws {
        cluster = postgres
        folder = try temporaryFolder("pgbouncer")
        port = try unusedPort()
        let configuration = """
            [databases]
            * = host=\(postgres.folder) port=\(postgres.port)
            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(folder)/users.txt
            pool_mode = transaction
            default_pool_size = \(poolSize)
            max_client_conn = 500
            logfile = \(folder)/pgbouncer.log
            pidfile = \(folder)/pgbouncer.pid
            """
        try configuration.write(toFile: folder + "/pgbouncer.ini", atomically: true, encoding: .utf8)
        try "\"\(postgres.superuser)\" \"\"\n".write(toFile: folder + "/users.txt", atomically: true, encoding: .utf8)
        try postgres.giveToServerUser(folder)
        try postgres.runAsServerUser("/usr/sbin/pgbouncer", ["-d", folder + "/pgbouncer.ini"])
        try waitForPort(port)
    }

    /// The URL of `database` through pgbouncer.
    public func url(_ database: String) -> String {
        "postgres://\(cluster.superuser)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    public var log: String { (try? String(contentsOfFile: folder + "/pgbouncer.log", encoding: .utf8)) ?? "" }

    public func stop() {
        if let text = try? String(contentsOfFile: folder + "/pgbouncer.pid", encoding: .utf8),
           let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGTERM)
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// Waits (at most ``Patience/limit``) until something accepts TCP connections on the loopback port.
func waitForPort(_ port: Int) throws {
    let deadline = Date().addingTimeInterval(Patience.seconds)
    while Date() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        close(fd)
        if connected == 0 { return }
        usleep(50_000)
    }
    throw PeerError("nothing listens on 127.0.0.1:\(port)")
}
