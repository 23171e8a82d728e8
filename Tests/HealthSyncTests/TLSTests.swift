import Foundation
import HealthSync
import SyncProtocol
import Testing
import TestSupport

/// TLS verification against a real HTTPS server on loopback (Python's ssl module) whose
/// certificate a private CA made for the test signed: trusted only when that CA is pinned.
@Suite(.serialized) struct TLSTests {
    final class HTTPSServer: @unchecked Sendable {
        let folder: String
        let process = Process()
        var port = 0

        /// Makes the certificates and starts the server, off the shared concurrency pool (three
        /// RSA keys and a Python start take seconds on a loaded machine).
        static func start() async throws -> HTTPSServer { try await onOwnThread { try HTTPSServer() } }

        private init() throws {
            folder = NSTemporaryDirectory() + "hg-tls-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            // A CA, a server certificate for 127.0.0.1 signed by it, and an unrelated second CA.
            try Self.sh("""
                cd '\(folder)'
                openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=HealthGate-Test-CA
                openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj /CN=Other-CA
                openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
                printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > ext.cnf
                openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf
                """)
            let script = """
                import http.server, json, ssl, sys
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        body = json.dumps({"status": "ok", "version": "tls-test"}).encode()
                        self.send_response(200); self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
                    def log_message(self, *a): pass
                s = http.server.HTTPServer(("127.0.0.1", 0), H)
                c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain("server.pem", "server.key")
                s.socket = c.wrap_socket(s.socket, server_side=True)
                print(s.server_address[1], flush=True)
                s.serve_forever()
                """
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script]
            process.currentDirectoryURL = URL(fileURLWithPath: folder)
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while let byte = try out.fileHandleForReading.read(upToCount: 1), let b = byte.first, b != 0x0A { line.append(b) }
            guard let port = Int(String(decoding: line, as: UTF8.self)) else { throw PeerError("the HTTPS test server did not start") }
            self.port = port
        }

        static func sh(_ script: String) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-ec", script]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw PeerError("openssl failed") }
        }

        func stop() {
            end(process, signal: SIGKILL)
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    func health(_ server: HTTPSServer, pinned: String?) async -> Result<HealthResponse, SyncError> {
        var configuration = SyncClient.Configuration(server: URL(string: "https://127.0.0.1:\(server.port)")!)
        configuration.pinnedCAFile = pinned.map { server.folder + "/" + $0 }
        // A refused handshake is retried until the deadline: keep it short.
        configuration.requestTimeout = .seconds(3)
        guard let client = try? SyncClient(configuration: configuration) else { return .failure(.invalidResponse("no client")) }
        defer { Task { await client.shutdown() } }
        do { return .success(try await client.health()) } catch { return .failure(error) }
    }

    @Test func onlyThePinnedCAIsTrusted() async throws {
        let server = try await HTTPSServer.start()
        defer { server.stop() }
        // Pinned to the CA that signed the certificate: verified, and the answer is read.
        let pinned = await health(server, pinned: "ca.pem")
        #expect((try? pinned.get())?.version == "tls-test", "\(pinned)")
        // The system trust store does not know the private CA; another pinned CA does not match.
        for other in [nil, "other.pem"] as [String?] {
            let refused = await health(server, pinned: other)
            guard case .failure(let error) = refused else { Issue.record("\(other ?? "system") trusted the test CA"); continue }
            #expect("\(error)".lowercased().contains("certificate") || "\(error)".contains("handshake") || "\(error)".contains("TLS")
                    || "\(error)".contains("SSL"), "\(error)")
        }
    }
}
