import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate stats` buckets by the machine's local time zone (`TZ`), with ISO weeks starting on
/// Monday (docs/cli.md). Records sit just before and after local midnights, a week, a month and
/// a year boundary, a leap day and the 2024 daylight-saving change of Los Angeles; the command
/// runs under three zones and every bucket of every period is checked.
@Suite(.serialized) struct StatsTests {
    /// Record i: a 60 s workout of 2^i metres, a 30-minute sleep, 2^i steps and a habit event,
    /// all at this instant.
    static let instants = [
        "2023-12-31T23:45:00Z", "2024-01-01T00:15:00Z",  // UTC year, month and ISO week boundary
        "2024-01-31T23:30:00Z", "2024-02-01T00:30:00Z",  // UTC month boundary
        "2024-02-11T23:50:00Z", "2024-02-12T00:10:00Z",  // UTC Sunday -> Monday
        "2024-02-12T07:55:00Z", "2024-02-12T08:05:00Z",  // Los Angeles Sunday -> Monday
        "2024-02-29T09:55:00Z", "2024-02-29T10:05:00Z",  // Kiritimati (UTC+14) leap day -> March
        "2024-03-01T07:55:00Z", "2024-03-01T08:05:00Z",  // Los Angeles leap day -> March
        "2024-03-10T07:30:00Z", "2024-03-10T08:30:00Z",  // Los Angeles midnight before the DST change (PST)
        "2024-03-11T06:30:00Z", "2024-03-11T07:30:00Z",  // Los Angeles midnight after it (PDT)
    ]

    /// Per zone and period: (label, start of the bucket in UTC, the records in it), oldest first.
    /// Worked out independently of HealthGate (with Python's zoneinfo and ISO calendar).
    static let expected: [String: [String: [(String, String, [Int])]]] = [
        "UTC": [
            "day": [("2023-12-31", "2023-12-31T00:00:00Z", [0]), ("2024-01-01", "2024-01-01T00:00:00Z", [1]),
                    ("2024-01-31", "2024-01-31T00:00:00Z", [2]), ("2024-02-01", "2024-02-01T00:00:00Z", [3]),
                    ("2024-02-11", "2024-02-11T00:00:00Z", [4]), ("2024-02-12", "2024-02-12T00:00:00Z", [5, 6, 7]),
                    ("2024-02-29", "2024-02-29T00:00:00Z", [8, 9]), ("2024-03-01", "2024-03-01T00:00:00Z", [10, 11]),
                    ("2024-03-10", "2024-03-10T00:00:00Z", [12, 13]), ("2024-03-11", "2024-03-11T00:00:00Z", [14, 15])],
            "week": [("2023-W52", "2023-12-25T00:00:00Z", [0]), ("2024-W01", "2024-01-01T00:00:00Z", [1]),
                     ("2024-W05", "2024-01-29T00:00:00Z", [2, 3]), ("2024-W06", "2024-02-05T00:00:00Z", [4]),
                     ("2024-W07", "2024-02-12T00:00:00Z", [5, 6, 7]), ("2024-W09", "2024-02-26T00:00:00Z", [8, 9, 10, 11]),
                     ("2024-W10", "2024-03-04T00:00:00Z", [12, 13]), ("2024-W11", "2024-03-11T00:00:00Z", [14, 15])],
            "month": [("2023-12", "2023-12-01T00:00:00Z", [0]), ("2024-01", "2024-01-01T00:00:00Z", [1, 2]),
                      ("2024-02", "2024-02-01T00:00:00Z", [3, 4, 5, 6, 7, 8, 9]),
                      ("2024-03", "2024-03-01T00:00:00Z", [10, 11, 12, 13, 14, 15])],
            "year": [("2023", "2023-01-01T00:00:00Z", [0]), ("2024", "2024-01-01T00:00:00Z", Array(1...15))],
        ],
        "America/Los_Angeles": [
            "day": [("2023-12-31", "2023-12-31T08:00:00Z", [0, 1]), ("2024-01-31", "2024-01-31T08:00:00Z", [2, 3]),
                    ("2024-02-11", "2024-02-11T08:00:00Z", [4, 5, 6]), ("2024-02-12", "2024-02-12T08:00:00Z", [7]),
                    ("2024-02-29", "2024-02-29T08:00:00Z", [8, 9, 10]), ("2024-03-01", "2024-03-01T08:00:00Z", [11]),
                    ("2024-03-09", "2024-03-09T08:00:00Z", [12]), ("2024-03-10", "2024-03-10T08:00:00Z", [13, 14]),
                    ("2024-03-11", "2024-03-11T07:00:00Z", [15])],
            "week": [("2023-W52", "2023-12-25T08:00:00Z", [0, 1]), ("2024-W05", "2024-01-29T08:00:00Z", [2, 3]),
                     ("2024-W06", "2024-02-05T08:00:00Z", [4, 5, 6]), ("2024-W07", "2024-02-12T08:00:00Z", [7]),
                     ("2024-W09", "2024-02-26T08:00:00Z", [8, 9, 10, 11]), ("2024-W10", "2024-03-04T08:00:00Z", [12, 13, 14]),
                     ("2024-W11", "2024-03-11T07:00:00Z", [15])],
            "month": [("2023-12", "2023-12-01T08:00:00Z", [0, 1]), ("2024-01", "2024-01-01T08:00:00Z", [2, 3]),
                      ("2024-02", "2024-02-01T08:00:00Z", [4, 5, 6, 7, 8, 9, 10]),
                      ("2024-03", "2024-03-01T08:00:00Z", [11, 12, 13, 14, 15])],
            "year": [("2023", "2023-01-01T08:00:00Z", [0, 1]), ("2024", "2024-01-01T08:00:00Z", Array(2...15))],
        ],
        "Pacific/Kiritimati": [
            "day": [("2024-01-01", "2023-12-31T10:00:00Z", [0, 1]), ("2024-02-01", "2024-01-31T10:00:00Z", [2, 3]),
                    ("2024-02-12", "2024-02-11T10:00:00Z", [4, 5, 6, 7]), ("2024-02-29", "2024-02-28T10:00:00Z", [8]),
                    ("2024-03-01", "2024-02-29T10:00:00Z", [9, 10, 11]), ("2024-03-10", "2024-03-09T10:00:00Z", [12, 13]),
                    ("2024-03-11", "2024-03-10T10:00:00Z", [14, 15])],
            "week": [("2024-W01", "2023-12-31T10:00:00Z", [0, 1]), ("2024-W05", "2024-01-28T10:00:00Z", [2, 3]),
                     ("2024-W07", "2024-02-11T10:00:00Z", [4, 5, 6, 7]), ("2024-W09", "2024-02-25T10:00:00Z", [8, 9, 10, 11]),
                     ("2024-W10", "2024-03-03T10:00:00Z", [12, 13]), ("2024-W11", "2024-03-10T10:00:00Z", [14, 15])],
            "month": [("2024-01", "2023-12-31T10:00:00Z", [0, 1]), ("2024-02", "2024-01-31T10:00:00Z", [2, 3, 4, 5, 6, 7, 8]),
                      ("2024-03", "2024-02-29T10:00:00Z", [9, 10, 11, 12, 13, 14, 15])],
            "year": [("2024", "2023-12-31T10:00:00Z", Array(0...15))],
        ],
    ]

    /// A database holding the records of `instants`, written through the store as imports are.
    static func database() async throws -> Scratch {
        let scratch = try Scratch()
        let store = try await scratch.store()
        let source = Source(driver: "test", device: "stats", file: nil)
        var records: [HealthRecord] = []
        for (i, text) in instants.enumerated() {
            let t = try #require(ISO8601.parse(text))
            let amount = Double(1 << i)
            records.append(.workout(Workout(id: RecordID.derive("workout", "stats", String(i)), sport: "running", start: t,
                                            end: t.addingTimeInterval(60), timerS: 60, distanceM: amount, source: source)))
            // A night belongs to the day it ends in (DayBoundary): this one ends at `t`.
            records.append(.sleep(SleepSession(id: RecordID.derive("sleep", "stats", String(i)), start: t.addingTimeInterval(-1800),
                                               end: t, source: source)))
            records.append(.measurement(Measurement(id: RecordID.derive("steps", "stats", String(i)), kind: .steps, time: t,
                                                    end: t.addingTimeInterval(60), value: amount, source: source)))
            records.append(.habit(HabitEvent(id: RecordID.derive("habit", "stats", String(i)), habit: "water", time: t,
                                             value: 250, unit: "ml", source: source)))
        }
        _ = try await store.write(records)
        return scratch
    }

    @Test("every bucket of every period under a time zone", arguments: ["UTC", "America/Los_Angeles", "Pacific/Kiritimati"])
    func bucketsFollowTheLocalTimeZone(zone: String) async throws {
        #expect(FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/" + zone), "the zone \(zone) is not installed")
        let scratch = try await Self.database()
        let expectedByPeriod = try #require(Self.expected[zone])
        for period in ["day", "week", "month", "year"] {
            // The zone is the child's TZ, as a user's shell would set it.
            let result = try await Tool.run("/usr/bin/env", ["TZ=" + zone, CLI.executable, "stats", "--period", period, "--json",
                                                            "--db", scratch.dbPath])
            #expect(result.status == 0, "\(result.stderr)")
            let buckets = try #require((try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])?["periods"] as? [[String: Any]])
            let expected = try #require(expectedByPeriod[period])
            #expect(buckets.map { $0["period"] as? String ?? "?" } == expected.map(\.0), "\(zone) \(period)")
            #expect(buckets.map { $0["start"] as? String ?? "?" } == expected.map(\.1), "\(zone) \(period)")
            for (bucket, (label, _, members)) in zip(buckets, expected) {
                let amount = Double(members.reduce(0) { $0 + (1 << $1) })
                let n = members.count
                #expect(bucket["workouts"] as? Int == n && bucket["sleep_sessions"] as? Int == n && bucket["habit_events"] as? Int == n,
                        "\(zone) \(label): \(bucket)")
                #expect(bucket["distance_m"] as? Double == amount && bucket["steps"] as? Double == amount && bucket["active_s"] as? Double == Double(60 * n),
                        "\(zone) \(label): \(bucket)")
            }
        }
    }

    /// `--since` and `--until` dates are local days too, like the buckets (before, a bare date was
    /// a UTC day: `stats --since` cut a local day in two). Los Angeles' Monday 2024-02-12 holds
    /// records 7 (08:05Z) but not 6 (07:55Z, still Sunday there); in UTC it holds 5, 6 and 7.
    @Test("--since and --until are local days", arguments: [("UTC", [5, 6, 7]), ("America/Los_Angeles", [7]),
                                                            ("Pacific/Kiritimati", [4, 5, 6, 7])])
    func dateRangesAreLocalDays(zone: String, members: [Int]) async throws {
        let scratch = try await Self.database()
        let result = try await Tool.run("/usr/bin/env", ["TZ=" + zone, CLI.executable, "workouts", "--json", "--db", scratch.dbPath,
                                                        "--since", "2024-02-12", "--until", "2024-02-12"])
        #expect(result.status == 0, "\(result.stderr)")
        let workouts = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(Set(workouts.compactMap { $0["start"] as? String }) == Set(members.map { Self.instants[$0] }), "\(zone)")
        // With an explicit zone the range means what it says, whatever TZ is.
        let utc = try await Tool.run("/usr/bin/env", ["TZ=" + zone, CLI.executable, "workouts", "--json", "--db", scratch.dbPath,
                                                     "--since", "2024-02-12T00:00:00Z", "--until", "2024-02-13T00:00:00Z"])
        let utcWorkouts = try #require(try JSONSerialization.jsonObject(with: Data(utc.stdout.utf8)) as? [[String: Any]])
        #expect(utcWorkouts.count == 3, "\(zone)")
    }
}
