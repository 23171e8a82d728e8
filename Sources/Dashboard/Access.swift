import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import Synchronization
public import WebSecurity

/// Who may reach the dashboard, and how. On loopback nothing is needed: the pages answer only to
/// loopback names. Any other address needs TLS and a password (``secured``): the pages then ask
/// for the password once and keep a session cookie (`Secure`, `HttpOnly`, `SameSite=Strict`).
/// `readOnly` serves the pages without any form (a shared screen, a wall display).
public struct DashboardAccess: Sendable {
    /// The certificate and key (PEM), reloaded on SIGHUP.
    public var tls: TLSCertificates?
    /// The password's bcrypt hash (``PasswordHasher``, `healthgate dashboard hash-password`);
    /// only the hash is ever stored.
    public var passwordHash: String?
    public var readOnly: Bool

    public init(tls: TLSCertificates? = nil, passwordHash: String? = nil, readOnly: Bool = false) {
        self.tls = tls
        self.passwordHash = passwordHash
        self.readOnly = readOnly
    }

    /// Fit to serve other machines: TLS and a password.
    public var secured: Bool { tls != nil && passwordHash != nil }

    /// Whether `text` is a password hash the dashboard can check (bcrypt, `$2b$12$...`).
    public static func isPasswordHash(_ text: String) -> Bool {
        PasswordHasher.cost(of: text).map { PasswordHasher.costs.contains($0) } == true && text.count == 60
    }
}

/// The request context of the dashboard: Hummingbird's, and the peer's address (the login
/// limit counts per address).
public struct DashboardContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let peer: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// Sessions after a right password: random tokens (``SecretToken``) of which only the hash is
/// kept, in memory (a restart asks for the password again), 30 days each.
final class Sessions: Sendable {
    static let lifetime: TimeInterval = 30 * 86_400
    static let cookie = "healthgate_session"
    private let live = Mutex<[String: Date]>([:])

    func start(now: Date) -> String {
        let token = SecretToken.generate()
        live.withLock { sessions in
            sessions = sessions.filter { $0.value > now }
            sessions[SecretToken.hash(token)] = now.addingTimeInterval(Self.lifetime)
        }
        return token
    }

    func isValid(_ token: String?, now: Date) -> Bool {
        guard let token else { return false }
        return live.withLock { $0[SecretToken.hash(token)].map { $0 > now } ?? false }
    }

    func end(_ token: String?) {
        guard let token else { return }
        _ = live.withLock { $0.removeValue(forKey: SecretToken.hash(token)) }
    }
}

/// Wrong passwords: at most five a minute from one address; then every try is refused (429)
/// until the minute is over, right password or not, so that guessing costs a minute per five.
final class LoginLimit: Sendable {
    static let attempts = 5
    static let window: TimeInterval = 60
    private let failures = Mutex<[String: (count: Int, since: Date)]>([:])

    /// Seconds to wait before `peer` may try again; nil: it may try now.
    func wait(_ peer: String, now: Date) -> Int? {
        failures.withLock { all in
            guard let f = all[peer] else { return nil }
            let left = f.since.addingTimeInterval(Self.window).timeIntervalSince(now)
            if left <= 0 {
                all.removeValue(forKey: peer)
                return nil
            }
            return f.count >= Self.attempts ? Int(left.rounded(.up)) : nil
        }
    }

    func failed(_ peer: String, now: Date) {
        failures.withLock { all in
            if all.count > 10_000 { all = all.filter { $0.value.since.addingTimeInterval(Self.window) > now } }
            var current: (count: Int, since: Date) = (0, now)
            if let f = all[peer], f.since.addingTimeInterval(Self.window) > now { current = f }
            all[peer] = (current.count + 1, current.since)
        }
    }

    func succeeded(_ peer: String) { _ = failures.withLock { $0.removeValue(forKey: peer) } }
}

/// With a password: every page but the login page and the scripts needs a session; a page asked
/// for without one sends the browser to the login page (and back after it), a form is refused.
struct SessionMiddleware: RouterMiddleware {
    typealias Context = DashboardContext
    let sessions: Sessions
    let now: @Sendable () -> Date

    static let open: Set<String> = ["/login"]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if Self.open.contains(path) || HTML.scripts[path] != nil || sessions.isValid(request.cookies[Sessions.cookie]?.value, now: now()) {
            return try await next(request, context)
        }
        guard request.method == .get || request.method == .head else {
            return DashboardServer.refusal(.forbidden, "Log in first: your session ended.")
        }
        let back = DashboardServer.safeReturn(request.uri.description)
        return Response(status: .seeOther, headers: [.location: "/login?next=" + Pages.urlQueryValue(back), .cacheControl: "no-store"])
    }
}

/// The login form, as posted.
struct LoginForm: Decodable, Sendable {
    var password: String
    var next: String?
}

extension Pages {
    /// *login*: the password, once per browser for 30 days.
    static func login(next: String, problem: String? = nil) -> String {
        let message = problem.map { "<p role=\"alert\" class=\"problem\">\(HTML.escape($0))</p>\n" } ?? ""
        return HTML.page(title: "Log in", current: "/login", body: """
            \(message)<form method="post" action="/login">
            <input type="hidden" name="next" value="\(HTML.escape(next))">
            <fieldset><legend>This dashboard needs its password</legend>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1000">
            <button type="submit">Log in</button></fieldset></form>
            """, navigation: false)
    }
}
