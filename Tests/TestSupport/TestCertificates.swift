public import Foundation

/// Certificates made with openssl for a test, in a folder of their own: a CA (`ca.pem`), a server
/// certificate for 127.0.0.1 and localhost signed by it (`server.pem`, `server.key`), a second
/// one with another name (`renewed.pem`, `renewed.key`, CN HealthGate-Renewed), one that expired
/// (`expired.pem`, `expired.key`: valid in 2020 only) and an unrelated CA (`other.pem`).
public final class TestCertificates: Sendable {
    public let folder: String

    public static func make() async throws -> TestCertificates { try await onOwnThread { try TestCertificates() } }

    public func path(_ name: String) -> String { folder + "/" + name }

    private init() throws {
        folder = try temporaryFolder("certificates")
        let script = """
            set -e
            cd '\(folder)'
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3 -subj /CN=HealthGate-Test-CA
            openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 3 -subj /CN=Other-CA
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > ext.cnf
            for name in server renewed; do
              cn=HealthGate-Test-Server; [ $name = renewed ] && cn=HealthGate-Renewed
              openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -subj /CN=$cn
              openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $name.pem -days 3 -extfile ext.cnf
            done
            # Expired: openssl ca sets the validity dates themselves.
            mkdir -p ca-db && : > ca-db/index.txt && echo 01 > ca-db/serial
            printf '[ca]\\ndefault_ca=test\\n[test]\\ndatabase=ca-db/index.txt\\nserial=ca-db/serial\\nnew_certs_dir=ca-db\\n' > ca.cnf
            printf 'default_md=sha256\\npolicy=any\\ncopy_extensions=none\\n[any]\\ncommonName=supplied\\n' >> ca.cnf
            openssl req -newkey rsa:2048 -nodes -keyout expired.key -out expired.csr -subj /CN=HealthGate-Expired
            openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \\
              -startdate 20200101000000Z -enddate 20200102000000Z -extfile ext.cnf -notext
            chmod 600 *.key
            """
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        let log = folder + "/openssl.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = FileHandle(forWritingAtPath: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PeerError("openssl failed: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }
}
