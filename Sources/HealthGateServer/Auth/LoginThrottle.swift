import Foundation
import Synchronization

/// At most `limit` events per key within `window`: the bookkeeping behind the server's rate
/// limits. Kept in memory (a restart forgets it) and bounded: at most `maxKeys` keys are
/// remembered; past that, keys without a recent event are forgotten first. Pure.
public struct EventWindow: Sendable {
    public struct Policy: Sendable, Equatable {
        public var limit: Int
        public var window: TimeInterval
        public var maxKeys: Int

        public init(limit: Int, window: TimeInterval, maxKeys: Int = 100_000) {
            self.limit = limit
            self.window = window
            self.maxKeys = maxKeys
        }
    }

    public let policy: Policy
    /// The latest events (at most `limit`) per key, oldest first.
    private var events: [String: [Date]] = [:]

    public init(policy: Policy) {
        self.policy = policy
    }

    /// Seconds to wait until one more event is allowed for every one of `keys`, or nil now.
    public func retryAfter(_ keys: [String], now: Date) -> Int? {
        let waits = keys.compactMap { key -> TimeInterval? in
            guard let list = events[key], list.count >= policy.limit else { return nil }
            let until = list[list.count - policy.limit].addingTimeInterval(policy.window)
            return until > now ? until.timeIntervalSince(now) : nil
        }
        guard let wait = waits.max() else { return nil }
        return max(1, Int(wait.rounded(.up)))
    }

    /// Counts an event for each of `keys`.
    public mutating func record(_ keys: [String], now: Date) {
        if events.count >= policy.maxKeys { forgetStale(now: now) }
        for key in keys {
            var list = events[key, default: []].filter { now.timeIntervalSince($0) < policy.window }
            list.append(now)
            if list.count > policy.limit { list.removeFirst(list.count - policy.limit) }
            events[key] = list
        }
    }

    public mutating func clear(_ key: String) {
        events[key] = nil
    }

    /// How many keys are remembered.
    public var keyCount: Int { events.count }

    private mutating func forgetStale(now: Date) {
        events = events.filter { _, list in list.last.map { now.timeIntervalSince($0) < policy.window } ?? false }
        // Still full (a flood of distinct keys within the window): forget the oldest half.
        if events.count >= policy.maxKeys {
            let keep = events.sorted { ($0.value.last ?? .distantPast) > ($1.value.last ?? .distantPast) }
                .prefix(policy.maxKeys / 2)
            events = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }
}

/// Failed-login bookkeeping for rate limiting, per account email and per client address.
///
/// After `maxFailures` failed logins within `window` for the same email, or from the same client
/// address, further logins for that email (or from that address) are refused with 429 until the
/// oldest of those failures is `window` old. A successful login clears its email's failures (not
/// its address's: an attacker who owns one account cannot reset the count that way).
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
    private var failures: EventWindow

    public init(policy: Policy = Policy()) {
        self.policy = policy
        failures = EventWindow(policy: .init(limit: policy.maxFailures, window: policy.window, maxKeys: policy.maxKeys))
    }

    /// Seconds to wait before trying again, or nil when a login may be tried now.
    public func retryAfter(email: String, client: String, now: Date) -> Int? {
        failures.retryAfter([Self.emailKey(email), Self.clientKey(client)], now: now)
    }

    public mutating func recordFailure(email: String, client: String, now: Date) {
        failures.record([Self.emailKey(email), Self.clientKey(client)], now: now)
    }

    public mutating func recordSuccess(email: String) {
        failures.clear(Self.emailKey(email))
    }

    /// How many emails and addresses are remembered.
    public var keyCount: Int { failures.keyCount }

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

/// Registrations per client address: each costs a password hash (deliberately slow) and
/// answers whether an email has an account, so an address may try `limit` within `window`;
/// beyond that 429 until the oldest of them is `window` old. Shared by concurrent requests.
public final class RegistrationThrottle: Sendable {
    /// 20 an hour by default.
    public static let defaultPolicy = EventWindow.Policy(limit: 20, window: 3600)
    private let state: Mutex<EventWindow>

    public init(policy: EventWindow.Policy = defaultPolicy) {
        state = Mutex(EventWindow(policy: policy))
    }

    /// Counts an attempt from `client` if one is allowed now; else the seconds to wait.
    public func admit(client: String, now: Date = Date()) -> Int? {
        state.withLock { window in
            if let wait = window.retryAfter([client], now: now) { return wait }
            window.record([client], now: now)
            return nil
        }
    }
}
