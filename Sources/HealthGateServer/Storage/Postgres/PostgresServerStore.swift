public import Foundation
public import HealthModel
public import Logging
import PostgresNIO
public import ServiceLifecycle
public import SyncProtocol

/// The ``ServerStore`` for operators past one machine: a PostgreSQL database (15 or later) that
/// several stateless server processes share.
///
/// The history cursor never skips a row. PostgreSQL makes rows visible in commit order, and a
/// transaction may commit after a later-numbered one, so a pull of "everything after N" could
/// pass a row that was still invisible and never see it. Here a change number is taken only
/// under the row lock of the user's counter (`users.change_seq`, locked `FOR UPDATE` first in
/// every transaction that changes the user's records) and that lock is held to commit: a second
/// transaction of the same user waits for the first to commit before it numbers anything. So the
/// numbers visible to any reader are always 1...N with no hole, and `seq > cursor` is exact.
/// Different users never wait for each other.
public final class PostgresServerStore: ServerStore {
    let database: PostgresDatabase
    private let logger: Logger
    /// For tests: runs inside an upload's transaction after its records are written and before
    /// it commits (the user's counter row still locked).
    let beforeCommit: (@Sendable () async -> Void)?

    /// A store over `settings` (nothing connects yet): ``services`` must run (the server runs
    /// them in its service group, ``withStore(_:logger:_:)`` for a command), then ``migrate()``.
    public convenience init(settings: PostgresSettings, logger: Logger = Logger(label: "healthgate-server.postgres")) throws {
        try self.init(settings: settings, logger: logger, beforeCommit: nil)
    }

    init(settings: PostgresSettings, logger: Logger, beforeCommit: (@Sendable () async -> Void)?) throws {
        database = try PostgresDatabase(settings: settings, logger: logger)
        self.logger = logger
        self.beforeCommit = beforeCommit
    }

    /// The connection pool, a service: the store works while it runs.
    public var services: [any Service] { [database.client] }

    public var description: String { database.settings.description }

    /// Runs `body` with a store over `settings`, its pool running, migrated first when asked.
    public static func withStore<T: Sendable>(_ settings: PostgresSettings, migrate: Bool = true,
                                              logger: Logger = Logger(label: "healthgate-server.postgres"),
                                              _ body: @escaping @Sendable (PostgresServerStore) async throws -> T) async throws -> T {
        let store = try PostgresServerStore(settings: settings, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await store.database.client.run()
                return nil
            }
            defer { group.cancelAll() }
            if migrate { _ = try await store.migrate() }
            return try await body(store)
        }
    }

    /// Applies the migrations not yet applied; answers their names.
    @discardableResult
    public func migrate() async throws -> [String] {
        try await PostgresSchema.migrate(database, logger: logger)
    }

    /// The limits count in the database: every server process on it counts together.
    public func limitLedger(rules: [LimitKind: EventWindow.Policy]) -> (any LimitLedger)? {
        PostgresLimitLedger(database: database, rules: rules, logger: logger)
    }

    public func prepare(logger: Logger) async throws {
        let applied = try await migrate()
        if !applied.isEmpty { logger.notice("database \(description): applied \(applied.joined(separator: ", "))") }
    }

    /// Names of the migrations applied, in order.
    public func appliedMigrations() async throws -> [String] {
        try await PostgresSchema.applied(database, logger: logger)
    }

    /// Whether the database answers a query now.
    public func ping() async throws {
        try await database.read { connection in
            try await connection.query("SELECT 1", logger: self.logger)
        }
    }

    /// Connections of the pool in use, waiting, and waits that gave up (for `/metrics`).
    public var poolUsage: (leased: Int, waiting: Int, timedOut: Int, size: Int) {
        let usage = database.currentUsage
        return (usage.leased, usage.waiting, usage.timedOut, database.settings.poolMax)
    }

    public func gauges() -> [(name: String, help: String, value: Double)] {
        let usage = poolUsage
        return [("database_connections_leased", "PostgreSQL connections in use by requests.", Double(usage.leased)),
                ("database_requests_waiting", "Requests waiting for a PostgreSQL connection.", Double(usage.waiting)),
                ("database_pool_size", "PostgreSQL connections this process may open (pool_max).", Double(usage.size)),
                ("database_waits_given_up", "Requests answered 503 after waiting pool_wait for a connection (since start).",
                 Double(usage.timedOut))]
    }

    // MARK: Accounts

    public func createAccount(email: String, passwordHash: String, now: Date) async throws -> Account {
        let account = Account.new(email: email, passwordHash: passwordHash, now: now)
        let now = account.createdAt
        do {
            try await database.read { connection in
                try await connection.query("""
                    INSERT INTO users (id, email, password_hash, created_at) VALUES (\(account.id), \(email), \(passwordHash), \(now))
                    """, logger: self.logger)
            }
        } catch let failure as PostgresFailure where failure.sqlState == "23505" {
            throw StoreError.emailTaken
        }
        return account
    }

    public func account(email: String) async throws -> Account? {
        try await database.read { connection in
            try await Self.first(connection.query("""
                SELECT id, email, password_hash, created_at FROM users WHERE email = \(email)
                """, logger: self.logger), as: (String, String, String, Date).self).map(Account.init)
        }
    }

    public func account(id: String) async throws -> Account? {
        try await database.read { connection in
            try await Self.first(connection.query("""
                SELECT id, email, password_hash, created_at FROM users WHERE id = \(id)
                """, logger: self.logger), as: (String, String, String, Date).self).map(Account.init)
        }
    }

    public func randomPasswordHash() async throws -> String? {
        // Ids are random UUIDs: the first account at or after a random one (wrapping round) is an
        // account picked at random, in one index lookup.
        let point = UUID().uuidString.lowercased()
        return try await database.read { connection in
            try await Self.first(connection.query("""
                (SELECT password_hash FROM users WHERE id >= \(point) ORDER BY id LIMIT 1)
                UNION ALL (SELECT password_hash FROM users ORDER BY id LIMIT 1) LIMIT 1
                """, logger: self.logger), as: String.self)
        }
    }

    public func replacePasswordHash(userId: String, old: String, new: String) async throws -> Bool {
        try await database.read { connection in
            try await Self.changed(connection.query("""
                UPDATE users SET password_hash = \(new) WHERE id = \(userId) AND password_hash = \(old) RETURNING 1
                """, logger: self.logger)) > 0
        }
    }

    public func changePassword(userId: String, passwordHash: String, keepDeviceId: String, now: Date) async throws -> Int {
        let now = wholeSeconds(now)
        return try await database.transaction { connection in
            try await connection.query("UPDATE users SET password_hash = \(passwordHash) WHERE id = \(userId)", logger: self.logger)
            return try await Self.changed(connection.query("""
                UPDATE devices SET revoked_at = \(now), is_primary = false
                WHERE user_id = \(userId) AND id <> \(keepDeviceId) AND revoked_at IS NULL RETURNING 1
                """, logger: self.logger))
        }
    }

    public func deleteAccount(userId: String) async throws -> Int {
        try await database.transaction { connection in
            // The counter's lock first, as every writer of the user's records takes it.
            try await connection.query("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: self.logger)
            let records = try await Self.changed(connection.query("DELETE FROM records WHERE user_id = \(userId) RETURNING 1",
                                                                  logger: self.logger))
            try await connection.query("DELETE FROM devices WHERE user_id = \(userId)", logger: self.logger)
            try await connection.query("DELETE FROM email_collisions WHERE user_id = \(userId)", logger: self.logger)
            // The count of failed logins for the account's email (the pairs' counts, hashed with
            // an address, end with their windows).
            let email = try await Self.first(connection.query("SELECT email FROM users WHERE id = \(userId)", logger: self.logger),
                                             as: String.self)
            if let email {
                try await connection.query("""
                    DELETE FROM limit_events WHERE kind = 'email' AND key = \(PostgresLimitLedger.stored(email))
                    """, logger: self.logger)
            }
            try await connection.query("DELETE FROM users WHERE id = \(userId)", logger: self.logger)
            return records
        }
    }

    // MARK: Devices

    public func createDevice(userId: String, name: String, tokenHash: String, now: Date) async throws -> Device {
        let device = Device.new(userId: userId, name: name, now: now)
        let now = device.createdAt
        try await database.read { connection in
            try await connection.query("""
                INSERT INTO devices (id, user_id, name, token_hash, created_at, last_seen_at)
                VALUES (\(device.id), \(userId), \(name), \(tokenHash), \(now), \(now))
                """, logger: self.logger)
        }
        return device
    }

    public func principal(tokenHash: String) async throws -> Principal? {
        try await database.read { connection in
            try await Self.first(connection.query("""
                SELECT user_id, id, coalesce(last_seen_at, created_at) FROM devices
                WHERE token_hash = \(tokenHash) AND revoked_at IS NULL
                """, logger: self.logger), as: (String, String, Date).self).map { Principal(userId: $0, deviceId: $1, lastSeenAt: $2) }
        }
    }

    public func touchDevice(id: String, now: Date) async throws {
        let now = wholeSeconds(now)
        let stale = now.addingTimeInterval(-Principal.seenResolution)
        // Matches no row (and locks nothing) when the device was seen within the minute.
        try await database.read { connection in
            try await connection.query("""
                UPDATE devices SET last_seen_at = \(now) WHERE id = \(id) AND (last_seen_at IS NULL OR last_seen_at < \(stale))
                """, logger: self.logger)
        }
    }

    public func revokeDevice(id: String, userId: String, now: Date) async throws -> Bool {
        let now = wholeSeconds(now)
        return try await database.read { connection in
            try await Self.changed(connection.query("""
                UPDATE devices SET revoked_at = \(now), is_primary = false
                WHERE id = \(id) AND user_id = \(userId) AND revoked_at IS NULL RETURNING 1
                """, logger: self.logger)) > 0
        }
    }

    public func devices(userId: String, seenSince: Date?) async throws -> [Device] {
        let since = seenSince ?? Date(timeIntervalSince1970: 0)
        return try await database.read { connection in
            var devices: [Device] = []
            let rows = try await connection.query("""
                SELECT id, user_id, name, is_primary, created_at, last_seen_at FROM devices
                WHERE user_id = \(userId) AND revoked_at IS NULL AND coalesce(last_seen_at, created_at) >= \(since)
                ORDER BY ordinal
                """, logger: self.logger)
            for try await row in rows.decode((String, String, String, Bool, Date, Date?).self) { devices.append(Device(row)) }
            return devices
        }
    }

    public func markPrimary(deviceId: String, userId: String) async throws -> Device {
        try await database.transaction { connection in
            // Two devices of one user asking at once: one after the other.
            try await connection.query("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: self.logger)
            try await connection.query("""
                UPDATE devices SET is_primary = false WHERE user_id = \(userId) AND is_primary AND id <> \(deviceId)
                """, logger: self.logger)
            let row = try await Self.first(connection.query("""
                UPDATE devices SET is_primary = true WHERE id = \(deviceId) AND user_id = \(userId) AND revoked_at IS NULL
                RETURNING id, user_id, name, is_primary, created_at, last_seen_at
                """, logger: self.logger), as: (String, String, String, Bool, Date, Date?).self)
            guard let row else { throw StoreError.noSuchDevice }
            return Device(row)
        }
    }

    // MARK: Records

    public func upsert(_ records: [IncomingRecord], userId: String, deviceId: String, now: Date) async throws -> [UpsertOutcome] {
        let received = wholeSeconds(now)
        return try await database.transaction { connection in
            // The counter first, then what is held: a statement reads what was committed when it
            // started, so the rows must be read by a statement that starts once the lock is held
            // (joined into the locking statement, they were read as of before the wait, and an
            // upload racing on another connection went unseen: caught by the racing test).
            var counter = try await self.lockCounter(connection, userId: userId)
            var held: [String: (version: Int, tombstone: Bool)] = [:]
            let ids = Array(Set(records.map(\.id)))
            let rows = try await connection.query("""
                SELECT record_id, version, body IS NULL FROM records WHERE user_id = \(userId) AND record_id = ANY(\(ids))
                """, logger: self.logger)
            for try await (id, version, tombstone) in rows.decode((String, Int, Bool).self) { held[id] = (version, tombstone) }

            // The decisions, in order (a record twice in one upload: the second sees the first).
            var outcomes: [UpsertOutcome] = []
            outcomes.reserveCapacity(records.count)
            var rowsById: [String: (seq: Int64, record: IncomingRecord)] = [:]
            for record in records {
                if let stored = held[record.id], !record.replaces(version: stored.version, tombstone: stored.tombstone) {
                    outcomes.append(.duplicate)
                    continue
                }
                counter += 1
                held[record.id] = (record.version, record.body == nil)
                rowsById[record.id] = (counter, record)
                outcomes.append(.accepted(seq: counter))
            }
            guard !rowsById.isEmpty else { return outcomes }
            // In statements of at most `writeChunkBytes` of bodies: each statement's parameters
            // are encoded whole in memory (a copy of every body), so a 32 MiB upload in one
            // statement held its records twice. Each sets the counter to its final value: the
            // row is locked, and the transaction commits them together.
            for chunk in Self.chunks(rowsById.values.sorted { $0.seq < $1.seq }) {
                try await self.write(chunk, userId: userId, deviceId: deviceId, received: received, counter: counter,
                                     connection: connection)
            }
            if let beforeCommit = self.beforeCommit { await beforeCommit() }
            return outcomes
        }
    }

    /// Bodies per write statement, at most (a record larger than this goes alone).
    static let writeChunkBytes = 2 << 20

    /// `rows` cut in order into runs of at most ``writeChunkBytes`` of bodies.
    static func chunks(_ rows: [(seq: Int64, record: IncomingRecord)]) -> [ArraySlice<(seq: Int64, record: IncomingRecord)>] {
        var chunks: [ArraySlice<(seq: Int64, record: IncomingRecord)>] = []
        var start = rows.startIndex, bytes = 0
        for index in rows.indices {
            let size = rows[index].record.body?.utf8.count ?? 0
            if index > start, bytes + size > writeChunkBytes {
                chunks.append(rows[start..<index])
                start = index
                bytes = 0
            }
            bytes += size
        }
        if start < rows.endIndex { chunks.append(rows[start...]) }
        return chunks
    }

    /// Writes stored versions (new rows, or over the row held) and the user's counter, in one statement.
    private func write(_ rows: ArraySlice<(seq: Int64, record: IncomingRecord)>, userId: String, deviceId: String, received: Date,
                       counter: Int64, connection: PostgresConnection) async throws {
        let ids = rows.map(\.record.id), seqs = rows.map(\.seq), versions = rows.map { Int64($0.record.version) }
        let types = rows.map(\.record.type.rawValue)
        let starts = rows.map(\.record.start.timeIntervalSince1970), ends = rows.map(\.record.end.timeIntervalSince1970)
        let bodies = rows.map { $0.record.body ?? "" }, gone = rows.map { $0.record.body == nil }
        let active = rows.map(\.record.figures.activeS), distance = rows.map(\.record.figures.distanceM)
        let energy = rows.map(\.record.figures.energyKcal), sleep = rows.map(\.record.figures.sleepS)
        try await connection.query("""
            WITH written AS (
            INSERT INTO records (user_id, record_id, seq, version, type, start_time, end_time, body, device_id, received_at,
                                 active_s, distance_m, energy_kcal, sleep_s)
            SELECT \(userId), r.id, r.seq, r.version, r.type, r.s, r.e, CASE WHEN r.gone THEN NULL ELSE r.body END,
                   \(deviceId), \(received), r.a, r.d, r.k, r.sl
            FROM unnest(\(ids)::text[], \(seqs)::int8[], \(versions)::int8[], \(types)::text[], \(starts)::float8[],
                        \(ends)::float8[], \(bodies)::text[], \(gone)::bool[], \(active)::float8[], \(distance)::float8[],
                        \(energy)::float8[], \(sleep)::float8[]) AS r(id, seq, version, type, s, e, body, gone, a, d, k, sl)
            ON CONFLICT (user_id, record_id) DO UPDATE SET
                seq = excluded.seq, version = excluded.version, type = excluded.type, start_time = excluded.start_time,
                end_time = excluded.end_time, body = excluded.body, device_id = excluded.device_id,
                received_at = excluded.received_at, active_s = excluded.active_s, distance_m = excluded.distance_m,
                energy_kcal = excluded.energy_kcal, sleep_s = excluded.sleep_s
            RETURNING 1)
            UPDATE users SET change_seq = \(counter) WHERE id = \(userId)
            """, logger: logger)
    }

    public func deleteRecord(id: String, userId: String, deviceId: String, now: Date) async throws -> Bool {
        let now = wholeSeconds(now)
        return try await database.transaction { connection in
            let counter = try await self.lockCounter(connection, userId: userId)
            let live = try await Self.first(connection.query("""
                SELECT body IS NOT NULL FROM records WHERE user_id = \(userId) AND record_id = \(id)
                """, logger: self.logger), as: Bool.self)
            guard let live else { return false }
            guard live else { return true }
            try await self.tombstone([id], from: counter + 1, userId: userId, deviceId: deviceId, now: now, connection: connection)
            try await self.saveCounter(connection, userId: userId, counter + 1)
            return true
        }
    }

    public func deleteAllRecords(userId: String, deviceId: String, now: Date) async throws -> Int {
        let now = wholeSeconds(now)
        return try await database.transaction { connection in
            let counter = try await self.lockCounter(connection, userId: userId)
            var ids: [String] = []
            let rows = try await connection.query("""
                SELECT record_id FROM records WHERE user_id = \(userId) AND body IS NOT NULL ORDER BY seq
                """, logger: self.logger)
            for try await id in rows.decode(String.self) { ids.append(id) }
            guard !ids.isEmpty else { return 0 }
            try await self.tombstone(ids, from: counter + 1, userId: userId, deviceId: deviceId, now: now, connection: connection)
            try await self.saveCounter(connection, userId: userId, counter + Int64(ids.count))
            return ids.count
        }
    }

    /// Makes records tombstones (data, times and figures gone; id, type and version kept), the
    /// change numbers `first`, `first + 1` ... in the order given.
    private func tombstone(_ ids: [String], from first: Int64, userId: String, deviceId: String, now: Date,
                           connection: PostgresConnection) async throws {
        let seqs = ids.indices.map { first + Int64($0) }
        try await connection.query("""
            UPDATE records SET seq = t.seq, body = NULL, start_time = 0, end_time = 0, device_id = \(deviceId),
                               received_at = \(now), active_s = 0, distance_m = 0, energy_kcal = 0, sleep_s = 0
            FROM unnest(\(ids)::text[], \(seqs)::int8[]) AS t(id, seq)
            WHERE records.user_id = \(userId) AND records.record_id = t.id
            """, logger: logger)
    }

    /// Locks the user's change counter until the transaction ends and answers it.
    private func lockCounter(_ connection: PostgresConnection, userId: String) async throws -> Int64 {
        try await Self.first(connection.query("SELECT change_seq FROM users WHERE id = \(userId) FOR UPDATE", logger: logger),
                             as: Int64.self) ?? 0
    }

    private func saveCounter(_ connection: PostgresConnection, userId: String, _ counter: Int64) async throws {
        try await connection.query("UPDATE users SET change_seq = \(counter) WHERE id = \(userId)", logger: logger)
    }

    public func history(userId: String, after: Int64, limit: Int, byteBudget: Int) async throws -> HistorySlice {
        try await database.read { connection in
            // The epoch and the page in one round trip: the epoch's row first (seq -1, body the epoch).
            let rows = try await connection.query("""
                SELECT -1::int8 AS seq, '' AS record_id, 0::int8 AS version, '' AS type, value AS body, '' AS device_id
                FROM server_meta WHERE key = 'history_epoch'
                UNION ALL (SELECT seq, record_id, version, type, body, device_id FROM records
                           WHERE user_id = \(userId) AND seq > \(after) ORDER BY seq LIMIT \(limit + 1))
                ORDER BY seq
                """, logger: self.logger)
            var epoch = ""
            var records: [StoredRecord] = []
            var bytes = 0
            var more = false
            for try await (seq, id, version, type, body, device) in rows.decode((Int64, String, Int, String, String?, String).self) {
                if seq < 0 {
                    epoch = body ?? ""
                    continue
                }
                let size = body?.utf8.count ?? 0
                if more || records.count == limit || (!records.isEmpty && bytes + size > byteBudget) {
                    more = true
                    continue  // the rest of the rows are drained, not kept
                }
                bytes += size
                records.append(StoredRecord(id: id, version: version, type: type, body: body, deviceId: device, seq: seq))
            }
            return HistorySlice(records: records, more: more, epoch: epoch)
        }
    }

    public func summaryScope(userId: String) async throws -> SummaryScope {
        try await database.read { connection in
            let body = try await Self.first(connection.query("""
                SELECT body FROM records WHERE user_id = \(userId) AND type = 'definition' AND body IS NOT NULL
                    AND body::jsonb ->> 'kind' = 'preferences'
                ORDER BY start_time DESC LIMIT 1
                """, logger: self.logger), as: String.self)
            let rows = try await connection.query("""
                SELECT (SELECT min(start_time) FROM records WHERE user_id = \(userId) AND start_time > 0),
                       (SELECT max(start_time) FROM records WHERE user_id = \(userId) AND start_time > 0)
                """, logger: self.logger)
            // Two seeks of the (user, start) index (tombstones start at 0); a night ends at most
            // two days after the latest start.
            var span: ClosedRange<Double>?
            for try await (first, last) in rows.decode((Double?, Double?).self) {
                if let first, let last { span = first...(last + PhysicalLimits.sleepSpanS) }
            }
            return SummaryScope(dayStartMinutes: SummaryScope.dayStart(preferencesBody: body), span: span)
        }
    }

    public func summaries(userId: String, periods: SummaryPeriods) async throws -> [SummaryResponse.Bucket] {
        guard let from = periods.edges.first, let to = periods.edges.last else { return [] }
        // The periods as a table (label, from, to); each is one range of the (user, start) index.
        let table = "unnest($2::text[], $3::float8[], $4::float8[]) AS p(label, lo, hi)"
        var binds = PostgresBindings()
        binds.append(userId)
        binds.append(periods.labels)
        binds.append(Array(periods.edges.dropLast()))
        binds.append(Array(periods.edges.dropFirst()))
        let periodBinds = binds
        // As the SQLite store and the client count them: marks are not entries.
        let marks = SummaryBuilder.marks.map { "'\($0)'" }.joined(separator: ", ")
        let counted = "coalesce(r.body::jsonb ->> 'label', '') NOT IN (\(marks))"
        return try await database.read { connection in
            var builder = SummaryBuilder(periods: periods)
            let names = try await connection.query("""
                SELECT body::jsonb ->> 'name' FROM records
                WHERE user_id = \(userId) AND type = 'definition' AND body IS NOT NULL AND body::jsonb ->> 'kind' = 'habit'
                """, logger: self.logger)
            for try await name in names.decode(String?.self) {
                if let name { builder.define(habit: name) }
            }
            let totals = try await connection.query(PostgresQuery(unsafeSQL: """
                SELECT p.label, count(*) FILTER (WHERE r.type = 'workout')::int8, sum(r.active_s), sum(r.distance_m), sum(r.energy_kcal),
                       count(*) FILTER (WHERE r.type = 'habit' AND \(counted))::int8, count(*) FILTER (WHERE r.type = 'measurement')::int8
                FROM \(table) JOIN records r ON r.user_id = $1 AND r.start_time >= p.lo AND r.start_time < p.hi
                WHERE r.body IS NOT NULL AND r.type NOT IN ('sleep', 'definition')
                GROUP BY p.label
                """, binds: periodBinds), logger: self.logger)
            for try await (label, workouts, activeS, distanceM, energyKcal, habitEvents, measurements)
                in totals.decode((String, Int, Double, Double, Double, Int, Int).self) {
                builder.add(label, workouts: workouts, activeS: activeS, distanceM: distanceM, energyKcal: energyKcal,
                            habitEvents: habitEvents, measurements: measurements)
            }
            let habits = try await connection.query(PostgresQuery(unsafeSQL: """
                SELECT p.label, r.body::jsonb ->> 'habit', r.body::jsonb ->> 'category', count(*)::int8,
                       coalesce(sum(CASE jsonb_typeof(r.body::jsonb -> 'value') WHEN 'number' THEN (r.body::jsonb ->> 'value')::float8 END), 0),
                       max(r.body::jsonb ->> 'unit')
                FROM \(table) JOIN records r ON r.user_id = $1 AND r.start_time >= p.lo AND r.start_time < p.hi
                WHERE r.type = 'habit' AND r.body IS NOT NULL AND \(counted)
                GROUP BY 1, 2, 3
                """, binds: periodBinds), logger: self.logger)
            for try await (label, habit, category, events, value, unit)
                in habits.decode((String, String?, String?, Int, Double, String?).self) {
                builder.addHabit(label, habit: habit, category: category, events: events, value: value, unit: unit)
            }
            // A night counts on the day it ends; a session is at most two days long.
            let nights = try await connection.query(PostgresQuery(unsafeSQL: """
                SELECT end_time, sleep_s FROM records
                WHERE user_id = $1 AND start_time >= $2 AND start_time < $3 AND type = 'sleep' AND body IS NOT NULL
                """, binds: Self.binds(userId, from - PhysicalLimits.sleepSpanS, to)), logger: self.logger)
            for try await (end, seconds) in nights.decode((Double, Double).self) { builder.addSleep(end: end, seconds: seconds) }
            return builder.result()
        }
    }

    public func definitionBodies(userId: String, kind: String) async throws -> [String] {
        try await database.read { connection in
            let rows = try await connection.query("""
                SELECT body FROM records
                WHERE user_id = \(userId) AND type = 'definition' AND body IS NOT NULL AND body::jsonb ->> 'kind' = \(kind)
                """, logger: self.logger)
            var bodies: [String] = []
            for try await body in rows.decode(String.self) { bodies.append(body) }
            return bodies
        }
    }

    public func recordBodies(userId: String, type: RecordType, kind: MeasurementKind?, from: Double, to: Double) async throws -> [String] {
        try await database.read { connection in
            let rows = try await connection.query("""
                SELECT body FROM records
                WHERE user_id = \(userId) AND start_time >= \(from) AND start_time < \(to) AND type = \(type.rawValue) AND body IS NOT NULL
                    AND (\(kind?.rawValue)::text IS NULL OR body::jsonb ->> 'kind' = \(kind?.rawValue))
                ORDER BY start_time
                """, logger: self.logger)
            var bodies: [String] = []
            for try await body in rows.decode(String.self) { bodies.append(body) }
            return bodies
        }
    }

    public func heartRateByMinute(userId: String, from: Double, to: Double, highest: Bool) async throws -> [(minute: Int, bpm: Double)] {
        try await database.read { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: """
                SELECT floor(start_time / 60)::int8 AS m, \(highest ? "max" : "min")((body::jsonb ->> 'value')::float8) FROM records
                WHERE user_id = $1 AND start_time >= $2 AND start_time < $3 AND type = 'measurement' AND body IS NOT NULL
                    AND body::jsonb ->> 'kind' = 'heart_rate' AND (body::jsonb ->> 'value')::float8 > 0
                GROUP BY m
                """, binds: Self.binds(userId, from, to)), logger: self.logger)
            var minutes: [(minute: Int, bpm: Double)] = []
            for try await (m, bpm) in rows.decode((Int, Double).self) { minutes.append((m, bpm)) }
            return minutes
        }
    }

    public func stepsBySlot(userId: String, from: Double, to: Double, slotMinutes: Int) async throws -> [(source: Source, slot: Int, steps: Double)] {
        try await database.read { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: """
                SELECT body::jsonb -> 'source' ->> 'driver' AS driver, body::jsonb -> 'source' ->> 'device' AS device,
                       (floor(start_time / \(slotMinutes * 60)) * \(slotMinutes))::int8 AS slot, sum((body::jsonb ->> 'value')::float8)
                FROM records
                WHERE user_id = $1 AND start_time >= $2 AND start_time < $3 AND type = 'measurement' AND body IS NOT NULL
                    AND body::jsonb ->> 'kind' = 'steps' AND (body::jsonb ->> 'value')::float8 > 0
                GROUP BY 1, 2, 3
                """, binds: Self.binds(userId, from, to)), logger: self.logger)
            var slots: [(source: Source, slot: Int, steps: Double)] = []
            for try await (driver, device, slot, steps) in rows.decode((String, String?, Int, Double).self) {
                slots.append((Source(driver: driver, device: device), slot, steps))
            }
            return slots
        }
    }

    // MARK: Helpers

    private static func binds(_ userId: String, _ from: Double, _ to: Double) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(userId)
        binds.append(from)
        binds.append(to)
        return binds
    }

    /// The first row of a result, decoded (the rest drained).
    static func first<T: PostgresDecodable & Sendable>(_ rows: PostgresRowSequence, as type: T.Type) async throws -> T? {
        var first: T?
        for try await value in rows.decode(T.self) where first == nil { first = value }
        return first
    }

    static func first<each T: PostgresDecodable & Sendable>(_ rows: PostgresRowSequence, as type: (repeat each T).Type) async throws
        -> (repeat each T)? {
        var first: (repeat each T)?
        for try await value in rows.decode(type) where first == nil { first = value }
        return first
    }

    /// How many rows a `... RETURNING 1` statement changed.
    static func changed(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// Stored times are whole seconds, as in the SQLite store.
}

extension Account {
    init(_ row: (String, String, String, Date)) {
        self.init(id: row.0, email: row.1, passwordHash: row.2, createdAt: row.3)
    }
}

extension Device {
    init(_ row: (String, String, String, Bool, Date, Date?)) {
        self.init(id: row.0, userId: row.1, name: row.2, primary: row.3, createdAt: row.4, lastSeenAt: row.5)
    }
}
