import Foundation
import Synchronization

/// Failed-login bookkeeping for rate limiting, per account email and per client address.
///
/// After `maxFailures` failed logins within `window` for the same email, or from the same client
/// address, further logins for that email (or from that address) are refused with 429 until the
/// oldest of those failures is `window` old. A successful login clears its email's failures (not
/// its address's: an attacker who owns one account cannot reset the count that way).
///
/// Kept in memory (a restart forgets it) and bounded: at most `maxKeys` emails and addresses
/// are remembered; past that, keys without a recent failure are forgotten first.
public struct LoginAttempts: Sendable {
    public struct Policy: Sendable, Equatable {
        public var maxFailures: Int
        public var window: TimeInterval
        public var maxKeys: Int

        public init(maxFailures: Int = 5, window: TimeInterval = 15 * 60, maxKeys: Int = 100_000) {
            self.maxFailures = maxFailures
            self.window = window
            self.maxKeys = maxKeys
        }
    }

    public let policy: Policy
    /// The latest failures (at most `maxFailures`) per key, oldest first.
    private var failures: [String: [Date]] = [:]

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Seconds to wait before trying again, or nil when a login may be tried now.
    public func retryAfter(email: String, client: String, now: Date) -> Int? {
        let waits = [Self.emailKey(email), Self.clientKey(client)].compactMap { key -> TimeInterval? in
            guard let list = failures[key], list.count >= policy.maxFailures else { return nil }
            let until = list[list.count - policy.maxFailures].addingTimeInterval(policy.window)
            return until > now ? until.timeIntervalSince(now) : nil
        }
        guard let wait = waits.max() else { return nil }
        return max(1, Int(wait.rounded(.up)))
    }

    public mutating func recordFailure(email: String, client: String, now: Date) {
        if failures.count >= policy.maxKeys { forgetStale(now: now) }
        for key in [Self.emailKey(email), Self.clientKey(client)] {
            var list = failures[key, default: []].filter { now.timeIntervalSince($0) < policy.window }
            list.append(now)
            if list.count > policy.maxFailures { list.removeFirst(list.count - policy.maxFailures) }
            failures[key] = list
        }
    }

    public mutating func recordSuccess(email: String) {
        failures[Self.emailKey(email)] = nil
    }

    /// How many emails and addresses are remembered.
    public var keyCount: Int { failures.count }

    private mutating func forgetStale(now: Date) {
        failures = failures.filter { _, list in list.last.map { now.timeIntervalSince($0) < policy.window } ?? false }
        // Still full (a flood of distinct keys within the window): forget the oldest half.
        if failures.count >= policy.maxKeys {
            let keep = failures.sorted { ($0.value.last ?? .distantPast) > ($1.value.last ?? .distantPast) }
                .prefix(policy.maxKeys / 2)
            failures = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }

    private static func emailKey(_ email: String) -> String { "email " + email }
    private static func clientKey(_ client: String) -> String { "client " + client }
}

/// The server's one ``LoginAttempts``, shared by concurrent requests.
public final class LoginThrottle: Sendable {
    private let state: Mutex<LoginAttempts>

    public init(policy: LoginAttempts.Policy = .init()) {
        state = Mutex(LoginAttempts(policy: policy))
    }

    public func retryAfter(email: String, client: String, now: Date = Date()) -> Int? {
        state.withLock { $0.retryAfter(email: email, client: client, now: now) }
    }

    public func recordFailure(email: String, client: String, now: Date = Date()) {
        state.withLock { $0.recordFailure(email: email, client: client, now: now) }
    }

    public func recordSuccess(email: String) {
        state.withLock { $0.recordSuccess(email: email) }
    }
}
