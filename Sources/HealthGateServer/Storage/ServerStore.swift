public import Foundation
public import HealthModel
public import Logging
public import ServiceLifecycle
public import SyncProtocol

/// Everything the server keeps, behind one small protocol: accounts, devices and their token
/// hashes, records, history and summaries. ``SQLiteServerStore`` is the default; another
/// database (PostgreSQL) implements the same protocol.
///
/// Rules every implementation keeps:
/// - every record and device operation is scoped to one user id: the same record id under two
///   users is two unrelated rows, and another user's device or record is "not found";
/// - ``upsert(_:userId:deviceId:now:)`` applies a whole batch in one transaction, and every
///   change (a stored version, a deletion) takes the next number of the user's own change
///   counter, in the same transaction;
/// - only hashes of passwords and tokens reach storage (callers never pass plain text).
public protocol ServerStore: Sendable {
    /// What must run while the store is used (a connection pool), in the server's service group.
    var services: [any Service] { get }
    /// Answers when the database answers a query; throws when it does not (`/v1/health`).
    func ping() async throws
    /// Brings the schema up to date before the server serves (SQLite does it on opening).
    func prepare(logger: Logger) async throws
    /// Where the login and registration limits count, when the store shares them between server
    /// processes; nil: in the server's memory.
    func limitLedger(rules: [LimitKind: EventWindow.Policy]) -> (any LimitLedger)?
    /// The store's own gauges for `/metrics` (a connection pool's use): name, help, value.
    func gauges() -> [(name: String, help: String, value: Double)]

    /// Creates an account. Throws ``StoreError/emailTaken`` when the (normalized) email exists.
    func createAccount(email: String, passwordHash: String, now: Date) async throws -> Account
    /// The account with this (normalized) email, if any.
    func account(email: String) async throws -> Account?
    /// The account with this id, if any.
    func account(id: String) async throws -> Account?
    /// The password hash of an account picked at random, nil without accounts (what a login
    /// for an unknown email is checked against, see ``PasswordHasher/verifyDecoy(_:against:)``).
    func randomPasswordHash() async throws -> String?
    /// Replaces the password hash if it still is `old` (a rehash at login must not undo a
    /// password change made meanwhile). Answers whether it did.
    func replacePasswordHash(userId: String, old: String, new: String) async throws -> Bool
    /// Sets a new password hash and revokes every device of the user but `keepDeviceId`, in one
    /// transaction. Answers how many devices it revoked.
    func changePassword(userId: String, passwordHash: String, keepDeviceId: String, now: Date) async throws -> Int
    /// Deletes the user's records, devices and account, in one transaction. Answers how many
    /// records (tombstones included) it deleted.
    func deleteAccount(userId: String) async throws -> Int

    /// Adds a logged-in device holding the token whose SHA-256 is `tokenHash`.
    func createDevice(userId: String, name: String, tokenHash: String, now: Date) async throws -> Device
    /// Who a token hash belongs to; nil for an unknown or revoked token.
    func principal(tokenHash: String) async throws -> Principal?
    /// Records that the device was seen, unless it was within ``Principal/seenResolution``
    /// (callers ask only when ``Principal/needsTouch(now:)``; the store checks again, for two
    /// requests at once).
    func touchDevice(id: String, now: Date) async throws
    /// Revokes the user's device's token (logout, or from another device); it stops being
    /// primary. Answers false when the user has no such device logged in.
    func revokeDevice(id: String, userId: String, now: Date) async throws -> Bool
    /// The user's devices that are logged in (and seen at or after `seenSince`, when given),
    /// oldest first.
    func devices(userId: String, seenSince: Date?) async throws -> [Device]
    /// Makes `deviceId` the user's only primary device and answers it.
    func markPrimary(deviceId: String, userId: String) async throws -> Device

    /// Stores valid records and tombstones for one user in one transaction: a new id or a higher
    /// version than the one held (a tombstone holds the version of its deletion) is stored with the
    /// next change number; at equal versions a tombstone replaces data (a deletion racing an edit
    /// made offline elsewhere: the deletion wins, as in the client's pull); anything else changes
    /// nothing. Answers one outcome per record, in order.
    func upsert(_ records: [IncomingRecord], userId: String, deviceId: String, now: Date) async throws -> [UpsertOutcome]
    /// Deletes one of the user's records: it becomes a tombstone (id, type and version kept,
    /// its data gone) with the next change number, so other devices learn of it from history.
    /// Answers false when the user has no such record; true for a tombstone already (unchanged).
    func deleteRecord(id: String, userId: String, deviceId: String, now: Date) async throws -> Bool
    /// Deletes every record of the user (see ``deleteRecord(id:userId:deviceId:now:)``), in one
    /// transaction. Answers how many records became tombstones.
    func deleteAllRecords(userId: String, deviceId: String, now: Date) async throws -> Int
    /// The user's records changed after `after`, oldest change first: at most `limit` records,
    /// and stopping early once the bodies reach `byteBudget` bytes (always at least one).
    func history(userId: String, after: Int64, limit: Int, byteBudget: Int) async throws -> HistorySlice
    /// What a summary of the user's records needs before its periods can be laid out: the day
    /// start of the user's synced preferences, and when their records start and end.
    func summaryScope(userId: String) async throws -> SummaryScope
    /// Totals of the user's records in `periods` (``SummaryBuilder``): records count in the
    /// period their start falls in, sleep sessions in the one their end falls in; tombstones
    /// count for nothing; periods without records are left out, oldest first.
    func summaries(userId: String, periods: SummaryPeriods) async throws -> [SummaryResponse.Bucket]

    // What derived habits read (``DerivedSummaries``), as the client's store gives it.

    /// The stored bodies of the user's definitions of `kind` (`habit`), deletions left out.
    func definitionBodies(userId: String, kind: String) async throws -> [String]
    /// The stored bodies of the user's records of `type` (measurements of `kind` only, when
    /// given) that start at or after `from` and before `to` (Unix seconds), oldest first.
    func recordBodies(userId: String, type: RecordType, kind: MeasurementKind?, from: Double, to: Double) async throws -> [String]
    /// The user's heart-rate measurements from `from` to `to`, one reading per minute (minutes
    /// since 1970): the highest of the minute's, or the lowest.
    func heartRateByMinute(userId: String, from: Double, to: Double, highest: Bool) async throws -> [(minute: Int, bpm: Double)]
    /// The user's step measurements from `from` to `to` summed per source and slot of
    /// `slotMinutes` (`slot`: its start in minutes since 1970).
    func stepsBySlot(userId: String, from: Double, to: Double, slotMinutes: Int) async throws -> [(source: Source, slot: Int, steps: Double)]
}

extension ServerStore {
    public var services: [any Service] { [] }
    public func prepare(logger: Logger) async throws {}
    public func limitLedger(rules: [LimitKind: EventWindow.Policy]) -> (any LimitLedger)? { nil }
    public func gauges() -> [(name: String, help: String, value: Double)] { [] }
}

/// Failures a store reports to its callers (anything else is an internal error).
public enum StoreError: Error, Equatable, Sendable {
    /// An account with this email exists.
    case emailTaken
    /// The device does not exist, is revoked or belongs to another user.
    case noSuchDevice
    /// Every database connection stayed in use for the store's wait limit: the client should
    /// come back later (answered 503 with Retry-After, never a hang).
    case busy
    /// The database did not answer or lost the connection (restarting, unreachable) or asked for
    /// the transaction to be tried again; nothing of it was kept. Answered 503 with Retry-After.
    case unavailable(String)
}

/// An account.
public struct Account: Sendable, Equatable {
    public var id: String
    /// Normalized (``EmailAddress/normalize(_:)``).
    public var email: String
    /// bcrypt hash (see ``PasswordHasher``).
    public var passwordHash: String
    public var createdAt: Date
}

extension Account {
    /// A new account (a fresh id; times are kept to whole seconds by every store).
    static func new(email: String, passwordHash: String, now: Date) -> Account {
        Account(id: UUID().uuidString.lowercased(), email: email, passwordHash: passwordHash, createdAt: wholeSeconds(now))
    }
}

/// Stored times are whole seconds in every store.
func wholeSeconds(_ date: Date) -> Date {
    Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
}

/// A logged-in device of an account.
public struct Device: Sendable, Equatable {
    public var id: String
    public var userId: String
    public var name: String
    public var primary: Bool
    public var createdAt: Date
    public var lastSeenAt: Date?

    /// A device that just logged in (a fresh id, seen now).
    static func new(userId: String, name: String, now: Date) -> Device {
        let now = wholeSeconds(now)
        return Device(id: UUID().uuidString.lowercased(), userId: userId, name: name, primary: false, createdAt: now, lastSeenAt: now)
    }

    /// The wire form.
    public var info: DeviceInfo {
        DeviceInfo(id: id, name: name, primary: primary, createdAt: createdAt, lastSeenAt: lastSeenAt)
    }
}

/// Who a request's device token stands for.
public struct Principal: Sendable, Equatable {
    public var userId: String
    public var deviceId: String
    /// When the device was last seen (its creation when never): what token expiry reads.
    public var lastSeenAt: Date

    /// How fine "last seen" is kept: at most one write a minute per device, so that a device
    /// syncing often costs reads only.
    public static let seenResolution: TimeInterval = 60

    /// Whether a request at `now` should record that the device was seen.
    public func needsTouch(now: Date) -> Bool { now.timeIntervalSince(lastSeenAt) >= Self.seenResolution }
}

/// A valid uploaded record, ready to store.
public struct IncomingRecord: Sendable, Equatable {
    /// Lower-case UUID text.
    public var id: String
    public var version: Int
    public var type: RecordType
    public var start: Date
    public var end: Date
    /// The record (`data`) as canonical JSON (``SyncAPI/encoder()``); nil for a tombstone.
    public var body: String?
    /// What the record adds to summaries.
    public var figures: RecordFigures
}

/// What one record adds to a summary bucket.
public struct RecordFigures: Sendable, Equatable {
    /// Workouts: active time (timer time, elapsed when the timer is unknown).
    public var activeS: Double = 0
    public var distanceM: Double = 0
    public var energyKcal: Double = 0
    /// Sleep sessions: time asleep.
    public var sleepS: Double = 0

    public init(activeS: Double = 0, distanceM: Double = 0, energyKcal: Double = 0, sleepS: Double = 0) {
        self.activeS = activeS
        self.distanceM = distanceM
        self.energyKcal = energyKcal
        self.sleepS = sleepS
    }

    public init(_ record: HealthRecord) {
        switch record {
        case .workout(let w):
            self.init(activeS: w.timerS ?? w.elapsedS, distanceM: w.distanceM ?? 0, energyKcal: w.energyKcal ?? 0)
        case .sleep(let s):
            self.init(sleepS: s.totalSleepS)
        case .habit, .measurement, .definition:
            self.init()
        }
    }
}

extension IncomingRecord {
    /// Whether this record (or tombstone) replaces the version held: a higher version does; at an
    /// equal version only a tombstone over data does (the deletion wins). Every store's upsert
    /// decides by this.
    public func replaces(version: Int, tombstone: Bool) -> Bool {
        if self.version != version { return self.version > version }
        return body == nil && !tombstone
    }
}

/// What ``ServerStore/upsert(_:userId:deviceId:now:)`` did with one record.
public enum UpsertOutcome: Sendable, Equatable {
    /// Stored (new id, or a higher version than the one held) under this change number of the user.
    case accepted(seq: Int64)
    /// The store holds this version or a newer one: nothing changed.
    case duplicate
}

/// One stored record version, or a tombstone, as history returns it.
public struct StoredRecord: Sendable, Equatable {
    public var id: String
    public var version: Int
    public var type: String
    /// Canonical JSON of the record; nil for a deleted record (a tombstone).
    public var body: String?
    /// The device that uploaded this version, or deleted the record.
    public var deviceId: String
    /// The user's change number.
    public var seq: Int64
}

/// A page of history before it is put on the wire.
public struct HistorySlice: Sendable, Equatable {
    public var records: [StoredRecord]
    /// More records changed after the last one returned.
    public var more: Bool
    /// Names the numbering the change numbers belong to: it changes when they are renumbered.
    public var epoch: String
}

