import AsyncHTTPClient
import Foundation
import WebSecurity
import HealthGateServer
import NIOCore
import NIOSSL
import Testing
import TestSupport

/// The server's own HTTPS (--tls-cert, --tls-key): clients that trust its CA talk to it, clients
/// that do not are refused and do not hurt it, an expired certificate is refused by clients and
/// named in the log, SIGHUP takes a renewed certificate without dropping open connections, and
/// plain HTTP beyond loopback needs saying so.
@Suite struct TLSServerTests {
    func client(trusting ca: String) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(ca))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    }

    func health(_ client: HTTPClient, _ server: ServerProcess) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: server.url.absoluteString + "/v1/health"), timeout: .seconds(20))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    func start(_ certificates: TestCertificates, certificate: String = "server.pem", key: String = "server.key") async throws
        -> ServerProcess {
        try await ServerProcess.start(extraArguments: ["--tls-cert", certificates.path(certificate),
                                                       "--tls-key", certificates.path(key)])
    }

    @Test func clientsTrustingItsCertificateAuthorityTalkHTTPS() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await start(certificates)
        #expect(server.url.scheme == "https")
        let trusting = try client(trusting: certificates.path("ca.pem"))
        #expect(try await health(trusting, server) == 200)

        // A client that refuses the certificate (another CA pinned) gets no answer, and the
        // server goes on serving the others.
        let refusing = try client(trusting: certificates.path("other.pem"))
        await #expect(throws: (any Error).self) { try await health(refusing, server) }
        #expect(try await health(trusting, server) == 200)
        // Plain HTTP on the TLS port is not served.
        let port = server.url.port!
        let plain = try await onOwnThread { () throws -> Int in
            let connection = try RawConnection(port: port)
            defer { connection.close() }
            return connection.request("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").status
        }
        #expect(plain != 200, "plain HTTP answered \(plain)")
        // TLS 1.1 is refused; 1.2 and 1.3 are spoken.
        for (version, accepted) in [("-tls1_1", false), ("-tls1_2", true), ("-tls1_3", true)] {
            let handshake = try await Tool.run("/usr/bin/openssl", ["s_client", version, "-connect", "127.0.0.1:\(port)",
                                                                    "-CAfile", certificates.path("ca.pem"), "-verify_return_error"],
                                               stdin: "")
            #expect((handshake.status == 0) == accepted, "\(version): \(handshake.stdout.suffix(500)) \(handshake.stderr.suffix(500))")
        }
        #expect(await server.stopped() == 0)
        try await trusting.shutdown()
        try await refusing.shutdown()
    }

    @Test func anExpiredCertificateIsNamedAndRefusedByClients() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await start(certificates, certificate: "expired.pem", key: "expired.key")
        #expect(server.log.contains("expired on 2020-01-02"), "\(server.log)")
        let trusting = try client(trusting: certificates.path("ca.pem"))
        await #expect(throws: (any Error).self) { try await health(trusting, server) }
        try await trusting.shutdown()
    }

    /// SIGHUP with a renewed certificate on disk: a connection open before it goes on working
    /// (the same TLS session), the next connection gets the new certificate; a reload that fails
    /// keeps the one in use.
    @Test func sighupTakesARenewedCertificateWithoutDroppingConnections() async throws {
        let certificates = try await TestCertificates.make()
        let folder = try temporaryFolder("tls-reload")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (certificate, key) = (folder + "/cert.pem", folder + "/key.pem")
        try FileManager.default.copyItem(atPath: certificates.path("server.pem"), toPath: certificate)
        try FileManager.default.copyItem(atPath: certificates.path("server.key"), toPath: key)
        let server = try await ServerProcess.start(extraArguments: ["--tls-cert", certificate, "--tls-key", key])
        let port = server.url.port!
        func subject() async throws -> String {
            let shown = try await Tool.run("/bin/sh", ["-c", """
                openssl s_client -connect 127.0.0.1:\(port) -CAfile '\(certificates.path("ca.pem"))' </dev/null 2>/dev/null \
                | openssl x509 -noout -subject
                """])
            return shown.stdout
        }
        #expect(try await subject().contains("HealthGate-Test-Server"))

        let open = try await KeptTLSConnection.open(port: port, ca: certificates.path("ca.pem"))
        defer { open.close() }
        #expect(try await open.get("/v1/health").hasPrefix("HTTP/1.1 200"))

        // Renewed on disk, then SIGHUP.
        try FileManager.default.removeItem(atPath: certificate)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: certificates.path("renewed.pem"), toPath: certificate)
        try FileManager.default.copyItem(atPath: certificates.path("renewed.key"), toPath: key)
        kill(server.process.processIdentifier, SIGHUP)
        try await eventually("the reload is logged") { server.log.contains("certificate reloaded") }
        #expect(try await subject().contains("HealthGate-Renewed"), "new connections get the renewed certificate")
        #expect(try await open.get("/v1/health").hasPrefix("HTTP/1.1 200"), "the connection opened before goes on")

        // A key that does not go with the certificate: refused, the renewed one stays.
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: certificates.path("server.key"), toPath: key)
        kill(server.process.processIdentifier, SIGHUP)
        try await eventually("the failed reload is logged") { server.log.contains("certificate reload failed") }
        #expect(try await subject().contains("HealthGate-Renewed"))
        #expect(server.process.isRunning)
        #expect(await server.stopped() == 0)
    }

    @Test func plainHTTPBeyondLoopbackNeedsSayingSo() async throws {
        let refused = try await Tool.run(ServerProcess.executable, ["--host", "0.0.0.0", "--port", "0", "--db", "/nonexistent/x.sqlite"])
        #expect(refused.status != 0 && refused.stderr.contains("--plain-http"), "\(refused.stderr)")
        let half = try await Tool.run(ServerProcess.executable, ["--tls-cert", "/etc/hostname"])
        #expect(half.status != 0 && half.stderr.contains("--tls-cert and --tls-key go together"))
        let certificates = try await TestCertificates.make()
        let wrongKey = try await Tool.run(ServerProcess.executable, ["--tls-cert", certificates.path("server.pem"), "--tls-key",
                                                                     certificates.path("other.key"), "--port", "0"])
        #expect(wrongKey.status != 0 && wrongKey.stderr.contains("do not make a TLS context"), "\(wrongKey.stderr)")
        let notPEM = try await Tool.run(ServerProcess.executable, ["--tls-cert", "/etc/hostname", "--tls-key", "/etc/hostname",
                                                                   "--port", "0"])
        #expect(notPEM.status != 0 && notPEM.stderr.contains("/etc/hostname: not a readable PEM"), "\(notPEM.stderr)")
        // Said so: it serves on every interface.
        let proxied = try await ServerProcess.start(extraArguments: ["--host", "0.0.0.0", "--plain-http"])
        #expect(proxied.url.scheme == "http")
        #expect(await proxied.stopped() == 0)
    }
}

/// One TLS connection kept open (openssl s_client), for requests one after another on it.
final class KeptTLSConnection: @unchecked Sendable {
    let process = ChildProcess()
    let input = Pipe()
    let output = Pipe()

    static func open(port: Int, ca: String) async throws -> KeptTLSConnection {
        try await onOwnThread {
            let connection = KeptTLSConnection()
            connection.process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            connection.process.arguments = ["s_client", "-quiet", "-connect", "127.0.0.1:\(port)", "-CAfile", ca, "-verify_return_error"]
            connection.process.standardInput = connection.input
            connection.process.standardOutput = connection.output
            connection.process.standardError = FileHandle.nullDevice
            try connection.process.run()
            return connection
        }
    }

    /// Sends a GET on the connection and answers the response (head and body).
    func get(_ path: String) async throws -> String {
        try await onOwnThread {
            self.input.fileHandleForWriting.write(Data("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            var received = Data()
            while true {
                let chunk = self.output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { throw PeerError("the connection closed: \(String(decoding: received, as: UTF8.self))") }
                received.append(chunk)
                let text = String(decoding: received, as: UTF8.self)
                if let end = text.range(of: "\r\n\r\n") {
                    let head = text[..<end.lowerBound].lowercased()
                    let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if text.utf8.count - text[..<end.upperBound].utf8.count >= length { return text }
                }
            }
        }
    }

    func close() { end(process, signal: SIGKILL) }
}

/// When the private key's permissions are worth a warning (the sample unit's setup, 0640 owned by
/// root and the server's group, is not: the guest scenario systemd-unit-server once logged it).
@Suite struct KeyAccessTests {
    @Test func aKeyReadableByOthersIsSaidAndTheServersGroupIsFine() {
        let server: Set<UInt32> = [998]
        #expect(TLSCertificates.keyAccessWarning(path: "k", mode: 0o600, fileGroup: 0, serverGroups: server) == nil)
        #expect(TLSCertificates.keyAccessWarning(path: "k", mode: 0o640, fileGroup: 998, serverGroups: server) == nil)
        #expect(TLSCertificates.keyAccessWarning(path: "k", mode: 0o640, fileGroup: 100, serverGroups: server)?
            .contains("can be read by group 100, which the server is not in") == true)
        #expect(TLSCertificates.keyAccessWarning(path: "k", mode: 0o644, fileGroup: 998, serverGroups: server)?
            .contains("can be read by every user") == true)
        #expect(TLSCertificates.keyAccessWarning(path: "k", mode: 0o604, fileGroup: 0, serverGroups: server) != nil)
    }
}
