import Foundation
import HealthSync
import SyncProtocol
import Testing
import TestSupport

/// TLS verification against the real server's own HTTPS (healthgate-server --tls-cert/--tls-key)
/// whose certificate a private CA made for the test signed: trusted only when that CA is pinned
/// (the daemon's `ca_file`, `healthgate login --ca-file`).
@Suite(.serialized) struct TLSTests {
    func client(_ server: ServerProcess, pinned: String?) throws -> SyncClient {
        var configuration = SyncClient.Configuration(server: server.url)
        configuration.pinnedCAFile = pinned
        // A refused handshake is retried until the deadline: keep it short.
        configuration.requestTimeout = .seconds(3)
        return try SyncClient(configuration: configuration)
    }

    func health(_ server: ServerProcess, pinned: String?) async -> Result<HealthResponse, SyncError> {
        guard let client = try? client(server, pinned: pinned) else { return .failure(.invalidResponse("no client")) }
        defer { Task { await client.shutdown() } }
        do { return .success(try await client.health()) } catch { return .failure(error) }
    }

    func start(_ certificates: TestCertificates) async throws -> ServerProcess {
        try await ServerProcess.start(extraArguments: ["--tls-cert", certificates.path("server.pem"), "--tls-key",
                                                       certificates.path("server.key")])
    }

    @Test func onlyThePinnedCAIsTrusted() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await start(certificates)
        #expect(server.url.scheme == "https")
        // Pinned to the CA that signed the certificate: verified, and the answer is read.
        let pinned = await health(server, pinned: certificates.path("ca.pem"))
        #expect((try? pinned.get())?.status == "ok", "\(pinned)")
        // The system trust store does not know the private CA; another pinned CA does not match.
        for other in [nil, certificates.path("other.pem")] as [String?] {
            let refused = await health(server, pinned: other)
            guard case .failure(let error) = refused else { Issue.record("\(other ?? "system") trusted the test CA"); continue }
            #expect("\(error)".lowercased().contains("certificate") || "\(error)".contains("handshake") || "\(error)".contains("TLS")
                    || "\(error)".contains("SSL"), "\(error)")
        }
    }

    /// A pinned install syncs everything through the server's own TLS, and a second one pulls it.
    @Test func aPinnedInstallSyncsOverTheServersOwnTLS() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await start(certificates)
        let client = try client(server, pinned: certificates.path("ca.pem"))
        defer { Task { await client.shutdown() } }
        _ = try await client.register(email: "tls@example.org", password: "correct horse battery")
        let first = try await client.login(email: "tls@example.org", password: "correct horse battery", deviceName: "box")
        let second = try await client.login(email: "tls@example.org", password: "correct horse battery", deviceName: "phone")
        let a = try await Install()
        try await a.importFixtures()
        let local = try await a.allRecords()
        let sent = try await fastForwarder(a, client, token: first.token, maxRecords: 5).drain()
        // Every record reached the server once: a retry after an answer lost to a timeout (a
        // loaded machine) finds its records there already, as duplicates, never twice.
        #expect(sent.accepted + sent.duplicates == local.count && sent.rejected == 0 && sent.remaining == 0
                && (sent.duplicates == 0 || sent.retries > 0), "\(sent)")
        let b = try await Install()
        let pulled = try await fastForwarder(b, client, token: second.token).pull()
        #expect(pulled.received == local.count)
        #expect(try await b.allRecords() == local)
    }
}
