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

    /// A key's latest events within the window (at most `limit`), oldest first.
    public func recent(_ key: String, now: Date) -> [Date] {
        (events[key] ?? []).filter { now.timeIntervalSince($0) < policy.window }
    }

    /// Seconds to wait until one more event is allowed, given a key's latest events (oldest
    /// first), or nil now: the one rule of every limit, whichever ledger holds the events.
    public static func wait(_ list: [Date], limit: Int, window: TimeInterval, now: Date) -> TimeInterval? {
        guard list.count >= limit else { return nil }
        let until = list[list.count - limit].addingTimeInterval(window)
        return until > now ? until.timeIntervalSince(now) : nil
    }

    /// Seconds to wait until one more event is allowed for every one of `keys`, or nil now.
    public func retryAfter(_ keys: [String], now: Date) -> Int? {
        let waits = keys.compactMap { key in Self.wait(events[key] ?? [], limit: policy.limit, window: policy.window, now: now) }
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

/// The login limits' rules. Pure: the events and the time are passed in (``LoginThrottle``
/// reads and counts them in a ``LimitLedger``).
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
/// and its success clears that pair's failures. The counts are kept in the server's memory (one
/// process; bounded by `maxKeys` per count) or, on PostgreSQL, in the database, where every
/// server process counts together.
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

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Each count's rule: how many events within how long.
    public var rules: [LimitKind: EventWindow.Policy] {
        [.pair: .init(limit: policy.pairFailures, window: policy.window, maxKeys: policy.maxKeys),
         .address: .init(limit: policy.addressFailures, window: policy.window, maxKeys: policy.maxKeys),
         .email: .init(limit: policy.emailFailures, window: policy.window, maxKeys: policy.maxKeys),
         .known: .init(limit: 1, window: policy.knownLifetime, maxKeys: policy.maxKeys)]
    }

    /// The ledger keys an (email, address) attempt is counted under.
    public struct Keys: Sendable {
        public var pair: LimitKey
        public var address: LimitKey
        public var email: LimitKey
        public var known: LimitKey
        var all: [LimitKey] { [pair, address, email, known] }
    }

    public func keys(email: String, client: String) -> Keys {
        let pair = email + "\u{0}" + client
        return Keys(pair: LimitKey(.pair, pair), address: LimitKey(.address, client), email: LimitKey(.email, email),
                    known: LimitKey(.known, pair))
    }

    /// Seconds to wait before the attempt may be made, or nil when it may be made now, given
    /// the keys' latest events.
    public func retryAfter(_ keys: Keys, events: [LimitKey: [Date]], now: Date) -> Int? {
        func wait(_ key: LimitKey) -> TimeInterval? {
            let rule = rules[key.kind]!
            return EventWindow.wait(events[key] ?? [], limit: rule.limit, window: rule.window, now: now)
        }
        let waits = isKnown(keys, events: events, now: now) ? [wait(keys.pair)] : [wait(keys.pair), wait(keys.address), wait(keys.email)]
        guard let longest = waits.compactMap({ $0 }).max() else { return nil }
        return max(1, Int(longest.rounded(.up)))
    }

    /// Whether the address logged in to the email successfully within the known lifetime.
    public func isKnown(_ keys: Keys, events: [LimitKey: [Date]], now: Date) -> Bool {
        EventWindow.wait(events[keys.known] ?? [], limit: 1, window: policy.knownLifetime, now: now) != nil
    }

    /// What a failure counts under: the pair and the address, and the email unless the address
    /// is known for it.
    public func failureKeys(_ keys: Keys, known: Bool) -> [LimitKey] {
        known ? [keys.pair, keys.address] : [keys.pair, keys.address, keys.email]
    }
}

/// The counts of the rate limits, by kind.
public enum LimitKind: String, Sendable, CaseIterable {
    case pair, address, email, known, registration
}

/// One count: a kind and its key (an address, an email, an email and address).
public struct LimitKey: Hashable, Sendable {
    public var kind: LimitKind
    public var key: String

    public init(_ kind: LimitKind, _ key: String) {
        self.kind = kind
        self.key = key
    }
}

/// Where the limits' events are kept: in the server's memory (one process: ``MemoryLimitLedger``)
/// or in the database, shared by every server process (``PostgresServerStore``).
public protocol LimitLedger: Sendable {
    /// Each key's latest events within its rule's window (at most its limit), oldest first.
    func recent(_ keys: [LimitKey], now: Date) async throws -> [LimitKey: [Date]]
    /// Counts one event at `now` for each key.
    func record(_ keys: [LimitKey], now: Date) async throws
    /// Forgets a key's events.
    func clear(_ key: LimitKey) async throws
}

/// The limits' events in memory (a restart forgets them), bounded: at most `maxKeys` keys per
/// kind (``EventWindow``).
public final class MemoryLimitLedger: LimitLedger {
    private let windows: Mutex<[LimitKind: EventWindow]>

    public init(rules: [LimitKind: EventWindow.Policy]) {
        windows = Mutex(rules.mapValues { EventWindow(policy: $0) })
    }

    public func recent(_ keys: [LimitKey], now: Date) -> [LimitKey: [Date]] {
        windows.withLock { windows in
            Dictionary(keys.map { ($0, windows[$0.kind]?.recent($0.key, now: now) ?? []) }) { first, _ in first }
        }
    }

    public func record(_ keys: [LimitKey], now: Date) {
        windows.withLock { windows in
            for key in keys { windows[key.kind]?.record([key.key], now: now) }
        }
    }

    public func clear(_ key: LimitKey) {
        windows.withLock { $0[key.kind]?.clear(key.key) }
    }

    /// Keys remembered, over every kind.
    public var keyCount: Int { windows.withLock { $0.values.reduce(0) { $0 + $1.keyCount } } }
}

/// The login limits (``LoginAttempts``) over a ledger.
public final class LoginThrottle: Sendable {
    public let attempts: LoginAttempts
    public let ledger: any LimitLedger

    /// Over `ledger`, or in memory.
    public init(policy: LoginAttempts.Policy = .init(), ledger: (any LimitLedger)? = nil) {
        attempts = LoginAttempts(policy: policy)
        self.ledger = ledger ?? MemoryLimitLedger(rules: attempts.rules)
    }

    /// Seconds to wait before `client` may try `email` again, or nil when it may try now.
    public func retryAfter(email: String, client: String, now: Date = Date()) async throws -> Int? {
        let keys = attempts.keys(email: email, client: client)
        return attempts.retryAfter(keys, events: try await ledger.recent(keys.all, now: now), now: now)
    }

    /// A wrong password for `email` from `client`.
    public func recordFailure(email: String, client: String, now: Date = Date()) async throws {
        let keys = attempts.keys(email: email, client: client)
        let known = attempts.isKnown(keys, events: try await ledger.recent([keys.known], now: now), now: now)
        try await ledger.record(attempts.failureKeys(keys, known: known), now: now)
    }

    /// A correct password for `email` from `client`: the address becomes known for the email
    /// and the pair's failures are forgotten (not the address's, not the email's: an attacker
    /// who owns one account cannot reset the counts that way).
    public func recordSuccess(email: String, client: String, now: Date = Date()) async throws {
        let keys = attempts.keys(email: email, client: client)
        try await ledger.clear(keys.pair)
        try await ledger.record([keys.known], now: now)
    }

    public func isKnown(email: String, client: String, now: Date = Date()) async throws -> Bool {
        let keys = attempts.keys(email: email, client: client)
        return attempts.isKnown(keys, events: try await ledger.recent([keys.known], now: now), now: now)
    }
}

/// Registrations per client address per hour, over a ledger.
public final class RegistrationThrottle: Sendable {
    public static let defaultPolicy = EventWindow.Policy(limit: 20, window: 3600)
    public let policy: EventWindow.Policy
    public let ledger: any LimitLedger

    public init(policy: EventWindow.Policy = defaultPolicy, ledger: (any LimitLedger)? = nil) {
        self.policy = policy
        self.ledger = ledger ?? MemoryLimitLedger(rules: [.registration: policy])
    }

    /// nil and counted when `client` may register now; else the seconds to wait.
    public func admit(client: String, now: Date = Date()) async throws -> Int? {
        let key = LimitKey(.registration, client)
        let events = try await ledger.recent([key], now: now)[key] ?? []
        if let wait = EventWindow.wait(events, limit: policy.limit, window: policy.window, now: now) {
            return max(1, Int(wait.rounded(.up)))
        }
        try await ledger.record([key], now: now)
        return nil
    }
}
