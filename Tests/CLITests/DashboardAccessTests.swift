import Foundation
import Testing
import TestSupport

/// The dashboard off loopback: TLS (a certificate of the tests' own CA) and a password hashed by
/// `healthgate dashboard hash-password`, driven by Python's http.client and ssl as a browser
/// would: the login, the session cookie, the limit on wrong passwords, the logout; and the
/// read-only pages.
@Suite struct DashboardAccessTests {
    typealias D = DashboardCLITests
    static let password = "correct horse battery staple"

    /// The hash of ``password``, in a file.
    static func hashFile(_ folder: String) async throws -> String {
        let hashed = try await Tool.run(CLI.executable, ["dashboard", "hash-password"], stdin: password + "\n")
        #expect(hashed.status == 0, "\(hashed.stderr)")
        let hash = hashed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(hash.hasPrefix("$2b$12$") && hash.count == 60 && !hashed.stdout.contains(password))
        let file = folder + "/dashboard.hash"
        try (hash + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func offLoopbackItNeedsTLSAndThePassword() async throws {
        let scratch = try await ViewsCLITests.database()
        let certificates = try await TestCertificates.make()
        let hashFile = try await Self.hashFile(scratch.folder)
        // Without TLS or without a password, another address is refused before anything opens.
        for arguments in [[String](), ["--password-hash-file", hashFile],
                          ["--tls-cert", certificates.path("server.pem"), "--tls-key", certificates.path("server.key")]] {
            let refused = try await CLI.run(["dashboard", "--db", scratch.dbPath, "--listen", "0.0.0.0:0"] + arguments)
            #expect(refused.status == 64 && refused.stderr.contains("is not on loopback: serving other machines needs TLS and a password"),
                    "\(arguments): \(refused.stderr)")
        }
        let short = try await Tool.run(CLI.executable, ["dashboard", "hash-password"], stdin: "short\n")
        #expect(short.status != 0 && short.stderr.contains("at least 8 characters"))
        try "hunter2\n".write(toFile: scratch.folder + "/plain.hash", atomically: true, encoding: .utf8)
        let plain = try await CLI.run(["dashboard", "--db", scratch.dbPath, "--password-hash-file", scratch.folder + "/plain.hash"])
        #expect(plain.status != 0 && plain.stderr.contains("not a password hash"), "\(plain.stderr)")

        let dashboard = try D.Dashboard(scratch, at: "2026-04-02T21:00", listen: "0.0.0.0:0", arguments: [
            "--tls-cert", certificates.path("server.pem"), "--tls-key", certificates.path("server.key"), "--password-hash-file", hashFile,
        ])
        #expect(dashboard.url.hasPrefix("https://"))
        let port = try #require(URLComponents(string: dashboard.url)?.port)
        let script = """
            import http.client, json, ssl, sys, urllib.parse
            port, ca, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
            context = ssl.create_default_context(cafile=ca)
            seen = {}
            def request(method, path, form=None, cookie=None, headers=None, host=None):
                c = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=60)
                h = dict(headers or {})
                if form is not None: h["Content-Type"] = "application/x-www-form-urlencoded"
                if cookie: h["Cookie"] = cookie
                if host: h["Host"] = host
                c.request(method, path, body=urllib.parse.urlencode(form).encode() if form is not None else None, headers=h)
                r = c.getresponse()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
            origin = {"Origin": f"https://127.0.0.1:{port}"}
            s, h, _ = request("GET", "/water?days=7")
            seen["anonymous"] = [s, h.get("location")]
            s, h, b = request("GET", "/login?next=%2Fwater%3Fdays%3D7")
            seen["login_page"] = [s, 'type="password"' in b, 'href="/water"' in b]
            seen["wrong"] = request("POST", "/login", {"password": "guess", "next": "/"}, headers=origin)[0]
            seen["cross_site"] = request("POST", "/login", {"password": password, "next": "/"}, headers={"Origin": "https://evil.example"})[0]
            s, h, _ = request("POST", "/login", {"password": password, "next": "https://evil.example/"}, headers=origin)
            seen["right"] = [s, h.get("location"), h.get("set-cookie", "")]
            cookie = h.get("set-cookie", "").split(";")[0]
            s, _, b = request("GET", "/", cookie=cookie)
            seen["with_session"] = [s, 'data-field="water-ml"' in b, 'action="/logout"' in b]
            # Off loopback the Host is the box's name: served (the password guards, not the name).
            seen["other_host"] = request("GET", "/water?days=7", cookie=cookie, host=f"healthgate.lan:{port}")[0]
            seen["forged_cookie"] = request("GET", "/", cookie="healthgate_session=" + "A" * 43)[0]
            token = b.split('name="csrf" value="')[1].split('"')[0]
            # Five wrong passwords, then even the right one waits.
            seen["limited"] = [request("POST", "/login", {"password": f"guess{i}"}, headers=origin)[0] for i in range(5)]
            s, h, b = request("POST", "/login", {"password": password, "next": "/water?days=7"}, headers=origin)
            seen["after_limit"] = [s, h.get("retry-after"), 'name="next" value="/water?days=7"' in b]
            s, h, _ = request("POST", "/logout", {"csrf": token}, cookie=cookie, headers=origin)
            seen["logout"] = [s, h.get("set-cookie", "")]
            seen["after_logout"] = request("GET", "/", cookie=cookie)[0]
            # Plain HTTP on the TLS port, and a client that does not trust the certificate: no page.
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10); c.request("GET", "/"); seen["plain"] = c.getresponse().status
            except Exception as e:
                seen["plain"] = type(e).__name__
            try:
                c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl.create_default_context(), timeout=10); c.request("GET", "/")
                seen["untrusted"] = c.getresponse().status
            except ssl.SSLError as e:
                seen["untrusted"] = "SSLError"
            print(json.dumps(seen))
            """
        let run = try await Tool.run("/usr/bin/env", ["python3", "-c", script, String(port), certificates.path("ca.pem"), Self.password])
        #expect(run.status == 0, "\(run.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect((seen["anonymous"] as? [Any])?.first as? Int == 303)
        #expect((seen["anonymous"] as? [Any])?.last as? String == "/login?next=%2Fwater%3Fdays%3D7")
        #expect((seen["login_page"] as? [NSNumber])?.map(\.intValue) == [200, 1, 0])
        #expect(seen["wrong"] as? Int == 401 && seen["cross_site"] as? Int == 403)
        let right = try #require(seen["right"] as? [Any])
        // Back to a page of the dashboard only; the cookie only over TLS, out of scripts' reach, same site only.
        #expect(right[0] as? Int == 303 && right[1] as? String == "/")
        let cookie = right[2] as? String ?? ""
        for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/", "Max-Age=2592000"] { #expect(cookie.contains(attribute), "\(cookie)") }
        #expect((seen["with_session"] as? [NSNumber])?.map(\.intValue) == [200, 1, 1])
        #expect(seen["other_host"] as? Int == 200 && seen["forged_cookie"] as? Int == 303)
        #expect(seen["limited"] as? [Int] == [401, 401, 401, 401, 401])
        let after = try #require(seen["after_limit"] as? [Any])
        // The page it answers keeps where the login was going.
        #expect(after[0] as? Int == 429 && Int(after[1] as? String ?? "") ?? 0 > 0 && after[2] as? Bool == true, "\(after)")
        #expect((seen["logout"] as? [Any])?.first as? Int == 303 && ((seen["logout"] as? [Any])?.last as? String)?.contains("Max-Age=0") == true)
        #expect(seen["after_logout"] as? Int == 303)
        #expect(seen["plain"] as? Int != 200 && seen["untrusted"] as? String == "SSLError", "\(seen)")
    }

    @Test func readOnlyPagesHaveNoForms() async throws {
        let scratch = try await ViewsCLITests.database()
        let dashboard = try D.Dashboard(scratch, at: "2026-04-02T21:00", arguments: ["--read-only"])
        let today = try await D.get(dashboard.url, "/")
        #expect(today.status == 200 && D.fields(today.body)["water-ml"] == 250)
        #expect(!today.body.contains("<form") && !today.body.contains("name=\"csrf\""))
        let entries = try await D.get(dashboard.url, "/entries?day=2026-04-02")
        #expect(entries.status == 200 && entries.body.contains("data-entry=") && !entries.body.contains("<form"))
        for path in ["/log", "/edit", "/delete"] {
            let refused = try await D.post(dashboard.url, path, form: [("csrf", "x"), ("kind", "glass")])
            #expect(refused.status == 403 && refused.body.contains("read-only"), "\(path): \(refused.status)")
        }
    }

    /// A Unix socket for a reverse proxy on the box: mode 0660, the proxy's Host and https
    /// Origin taken (the proxy answers for its name), a stale socket of an earlier run replaced,
    /// a relative path or a regular file at the path refused.
    @Test func aUnixSocketForAProxy() async throws {
        let scratch = try await ViewsCLITests.database()
        let relative = try await CLI.run(["dashboard", "--db", scratch.dbPath, "--listen", "unix:dashboard.sock"])
        #expect(relative.status == 64 && relative.stderr.contains("absolute path"), "\(relative.stderr)")
        let file = scratch.folder + "/file.sock"
        try "not a socket".write(toFile: file, atomically: true, encoding: .utf8)
        let occupied = try await CLI.run(["dashboard", "--db", scratch.dbPath, "--listen", "unix:" + file])
        #expect(occupied.status != 0 && (try? String(contentsOfFile: file, encoding: .utf8)) == "not a socket", "\(occupied.stderr)")

        let socket = scratch.folder + "/dashboard.sock"
        for round in 0..<2 {
            // The second round finds the first one's socket file left behind (killed): replaced.
            let dashboard = try D.Dashboard(scratch, at: "2026-04-02T21:00", listen: "unix:" + socket)
            #expect(dashboard.url == "unix:" + socket, "\(round)")
            var info = stat()
            #expect(stat(socket, &info) == 0 && info.st_mode & 0o777 == 0o660 && info.st_mode & S_IFMT == S_IFSOCK)
            let script = """
                import http.client, json, socket, sys, urllib.parse
                class Unix(http.client.HTTPConnection):
                    def connect(self):
                        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); self.sock.connect(sys.argv[1])
                def request(method, path, body=None, headers={}):
                    c = Unix("dashboard.example"); c.request(method, path, body=body, headers=headers); r = c.getresponse()
                    return r.status, r.read().decode()
                status, page = request("GET", "/")
                token = page.split('name="csrf" value="')[1].split('"')[0]
                posted, _ = request("POST", "/log", urllib.parse.urlencode({"csrf": token, "kind": "glass"}).encode(),
                                    {"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://dashboard.example"})
                other, _ = request("POST", "/log", urllib.parse.urlencode({"csrf": token, "kind": "glass"}).encode(),
                                   {"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"})
                print(json.dumps([status, 'data-field="water-ml"' in page, posted, other]))
                """
            let run = try await Tool.run("/usr/bin/env", ["python3", "-c", script, socket])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[200, true, 303, 403]", "\(run.stdout)")
            kill(dashboard.process.processIdentifier, SIGKILL)
            try await onOwnThread { dashboard.process.waitUntilExit() }
        }
    }
}
