public import Foundation
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

/// Failed-login bookkeeping for rate limiting. Pure: the caller passes the time.
///
/// Guessing is slowed down by three counts of failed logins within `window`, none of which lets
/// an attacker lock the owner out from the addresses the owner uses:
/// - per (email, address): after `pairFailures`, that address may not try that email;
/// - per address: after `addressFailures` (for any emails), that address may not try any email
///   it has not logged in to successfully;
/// - per email: after `emailFailures` from addresses the account has not logged in from, no such
///   address may try that email.
///
/// An address the account logged in from successfully within `knownLifetime` is *known* for
/// that email: only the first count applies to it, its failures do not add to the email's count,
/// and its success clears that pair's failures. Everything is kept in memory (a restart forgets
/// it) and bounded by `maxKeys` per count.
public struct LoginAttempts: Sendable {
    public struct Policy: Sendable, Equatable {
        public var pairFailures: Int
        public var addressFailures: Int
        public var emailFailures: Int
        public var window: TimeInterval
        /// How long a successful login keeps its address known for the email.
        public var knownLifetime: TimeInterval
        public var maxKeys: Int

        public init(pairFailures: Int = 5, addressFailures: Int = 20, emailFailures: Int = 50, window: TimeInterval = 15 * 60,
                    knownLifetime: TimeInterval = 30 * 86_400, maxKeys: Int = 100_000) {
            self.pairFailures = pairFailures
            self.addressFailures = addressFailures
            self.emailFailures = emailFailures
            self.window = window
            self.knownLifetime = knownLifetime
            self.maxKeys = maxKeys
        }
    }

    public let policy: Policy
    private var pairs: EventWindow
    private var addresses: EventWindow
    private var emails: EventWindow
    /// Successful logins: the latest per (email, address), kept for `knownLifetime`.
    private var known: EventWindow

    public init(policy: Policy = Policy()) {
        self.policy = policy
        pairs = EventWindow(policy: .init(limit: policy.pairFailures, window: policy.window, maxKeys: policy.maxKeys))
        addresses = EventWindow(policy: .init(limit: policy.addressFailures, window: policy.window, maxKeys: policy.maxKeys))
        emails = EventWindow(policy: .init(limit: policy.emailFailures, window: policy.window, maxKeys: policy.maxKeys))
        known = EventWindow(policy: .init(limit: 1, window: policy.knownLifetime, maxKeys: policy.maxKeys))
    }

    /// Seconds to wait before `client` may try `email` again, or nil when it may try now.
    public func retryAfter(email: String, client: String, now: Date) -> Int? {
        let pair = Self.pairKey(email, client)
        let pairWait = pairs.retryAfter([pair], now: now)
        if isKnown(pair, now: now) { return pairWait }
        let waits = [pairWait, addresses.retryAfter([client], now: now), emails.retryAfter([email], now: now)]
        return waits.compactMap { $0 }.max()
    }

    public mutating func recordFailure(email: String, client: String, now: Date) {
        let pair = Self.pairKey(email, client)
        pairs.record([pair], now: now)
        addresses.record([client], now: now)
        if !isKnown(pair, now: now) { emails.record([email], now: now) }
    }

    /// A correct password for `email` from `client`: the address becomes known for the email
    /// and the pair's failures are forgotten (not the address's, not the email's: an attacker
    /// who owns one account cannot reset the counts that way).
    public mutating func recordSuccess(email: String, client: String, now: Date) {
        let pair = Self.pairKey(email, client)
        pairs.clear(pair)
        known.record([pair], now: now)
    }

    /// Whether `client` logged in to `email` successfully within `knownLifetime`.
    public func isKnown(email: String, client: String, now: Date) -> Bool {
        isKnown(Self.pairKey(email, client), now: now)
    }

    /// How many keys are remembered, all counts together.
    public var keyCount: Int { pairs.keyCount + addresses.keyCount + emails.keyCount + known.keyCount }

    private func isKnown(_ pair: String, now: Date) -> Bool {
        known.retryAfter([pair], now: now) != nil
    }

    /// Emails cannot hold a NUL (they are checked for control characters): the pair key is unambiguous.
    private static func pairKey(_ email: String, _ client: String) -> String { email + "\u{0}" + client }
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

    public func recordSuccess(email: String, client: String, now: Date = Date()) {
        state.withLock { $0.recordSuccess(email: email, client: client, now: now) }
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
