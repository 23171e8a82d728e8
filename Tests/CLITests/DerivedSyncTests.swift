import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HealthModel
import HealthStore
import Testing
import TestSupport

/// Derived habits on two installs of one account and in the tracking server's summaries
/// (docs/derived-habits.md): the records and the definitions synced through a real server, each
/// install's `today` shows the same values and streaks, and the server computes the same value
/// for every day (its own reads of the synced records, the same rules); a backlog imported late
/// on the second install changes the same days everywhere, once.
@Suite(.serialized) struct DerivedSyncTests {
    typealias D = DerivedHabitTests
    static let zone = "Europe/Berlin"
    static let days = ["2026-03-26", "2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30"]
    static let at = "2026-03-30T21:00"

    func cli(_ arguments: [String], _ scratch: Scratch, stdin: String? = nil) async throws -> Tool.Result {
        let result = try await Tool.run(CLI.executable, arguments + ["--db", scratch.dbPath], stdin: stdin, environment: ["TZ": Self.zone])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result
    }

    /// Each derived habit's (amount, current streak, longest streak) in `today`.
    func today(_ scratch: Scratch) async throws -> [String: [Double]] {
        let result = try await cli(["today", "--json", "--at", Self.at], scratch)
        let rows = try #require((try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])?["habits"] as? [[String: Any]])
        var out: [String: [Double]] = [:]
        for (name, _) in D.habits {
            let row = try #require(rows.first { $0["name"] as? String == name }, "\(name) in \(result.stdout)")
            out[name] = [row["amount"] as? Double ?? -1, Double(row["current_streak"] as? Int ?? -1), Double(row["longest_streak"] as? Int ?? -1)]
        }
        return out
    }

    /// The server's values per habit and period start, from `/v1/summaries` in the user's zone.
    static func serverValues(_ reader: SummaryReader, period: String) async throws -> [String: [String: Double]] {
        let summary = try await reader.get("period=\(period)&tz=\(zone)")
        #expect(summary["time_zone"] as? String == zone && summary["day_start"] as? String == "04:00", "\(summary)")
        var values: [String: [String: Double]] = [:]
        for bucket in summary["buckets"] as? [[String: Any]] ?? [] {
            for d in bucket["derived"] as? [[String: Any]] ?? [] {
                let value = d["value"] as? Double ?? .nan, days = d["days"] as? Int ?? 0
                // A measurement's period value is the mean of its days' means.
                let name = d["habit"] as? String ?? "?"
                values[name, default: [:]][bucket["start"] as? String ?? "?"] = name == "rhr" ? value / Double(max(days, 1)) : value
            }
        }
        return values
    }

    /// The current streak a goal has by the server's values per period (`labels`: every period
    /// from the first with a value through the current one), by the rule of docs/days.md: a
    /// period without a value holds 0; the current period counts once met, or once an at-most
    /// goal is broken.
    static func streak(_ values: [String: Double], labels: [String], target: Double, atMost: Bool) -> Int {
        guard let first = labels.firstIndex(where: { values[$0] != nil }) else { return 0 }
        var run = 0
        for (i, label) in labels.enumerated() where i >= first {
            let met = atMost ? (values[label] ?? 0) <= target : (values[label] ?? 0) >= target
            if i == labels.count - 1, !met, !atMost { break }
            run = met ? run + 1 : 0
        }
        return run
    }

    /// `complete`: every habit has values (before the strap's runs arrive, no minute is below 100 bpm).
    func compare(_ a: Scratch, _ b: Scratch, _ reader: SummaryReader, complete: Bool) async throws -> [String: [String: Double]] {
        // Both installs: the same values and streaks.
        let onA = try await today(a), onB = try await today(b)
        #expect(onA == onB, "install A \(onA), install B \(onB)")
        // The server: every day's value as the second install explains it (and none where it has none).
        let explained = try await D().explained(b, zone: Self.zone, days: Self.days)
        let byDay = try await Self.serverValues(reader, period: "day")
        for (name, arguments) in D.habits {
            let server = (byDay[name] ?? [:]).filter { Self.days.contains($0.key) }
            let client = explained[name] ?? [:]
            #expect(Set(server.keys) == Set(client.keys), "\(name): server \(server), client \(client)")
            for (day, value) in client { #expect(abs((server[day] ?? -1) - value) < 1e-6, "\(name) \(day): server \(server[day] ?? -1), client \(value)") }
            #expect(!client.isEmpty || !complete, "\(name) has values to compare")
            // The streak that follows from the server's values is the one `today` shows.
            let target = try #require(Double(arguments[arguments.firstIndex(of: "--target")! + 1]))
            let weekly = arguments.contains("week")
            let values = weekly ? try await Self.serverValues(reader, period: "week")[name] ?? [:] : byDay[name] ?? [:]
            let labels = weekly ? ["2026-03-23", "2026-03-30"] : ["2026-03-25"] + Self.days
            let streak = Self.streak(values, labels: labels, target: target, atMost: arguments.contains("--at-most"))
            #expect(Double(streak) == onA[name]?[1], "\(name): \(streak) from the server's values, \(onA[name]?[1] ?? -1) in today")
        }
        return byDay
    }

    @Test func twoInstallsAndTheServerShowTheSameValuesAndStreaks() async throws {
        let a = try Scratch(), b = try Scratch()
        let all = D.records(TimeZone(identifier: Self.zone)!)
        // The 28th's steps and the strap's runs arrive late, on the second install.
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: Self.zone)!
        let d28 = c.date(from: DateComponents(year: 2026, month: 3, day: 28, hour: 4))!, d29 = d28.addingTimeInterval(86_400)
        func late(_ r: HealthRecord) -> Bool {
            switch r {
            case .measurement(let m): m.kind == .steps && m.time >= d28 && m.time < d29
            case .workout(let w): w.source == D.strap
            default: false
            }
        }
        try await a.store().write(all.filter { !late($0) })
        for (name, arguments) in D.habits { _ = try await cli(["define", "habit", name] + arguments, a) }

        let server = try await ServerProcess.start()
        let url = server.url.absoluteString, email = "derived@example.org", password = "a long passphrase"
        #expect(try await CLI.run(["register", "--server", url, "--email", email, "--password-stdin"], stdin: password).status == 0)
        for install in [a, b] {
            _ = try await cli(["login", "--server", url, "--email", email, "--password-stdin"], install, stdin: password)
            _ = try await cli(["sync"], install)
        }
        let reader = try await SummaryReader(server: server.url, email: email, password: password)
        let before = try await compare(a, b, reader, complete: false)

        // The backlog on the second install, synced; the first pulls it.
        try await b.store().write(all.filter(late))
        _ = try await cli(["sync"], b)
        _ = try await cli(["sync"], a)
        let after = try await compare(a, b, reader, complete: true)
        #expect(before["walk"]?["2026-03-28"] != after["walk"]?["2026-03-28"], "the late steps count: \(before["walk"] ?? [:]) \(after["walk"] ?? [:])")
        #expect(before["cardio"] != after["cardio"], "the strap's minutes count: \(before["cardio"] ?? [:]) \(after["cardio"] ?? [:])")
        // Imported and synced again: nothing twice.
        try await b.store().write(all.filter(late))
        _ = try await cli(["sync"], b)
        #expect(try await Self.serverValues(reader, period: "day") == after)
        // A week's value is the sum of its days'.
        let weeks = try await Self.serverValues(reader, period: "week")
        let walkWeek = Self.days.dropLast().compactMap { after["walk"]?[$0] }.reduce(0, +)
        #expect(abs((weeks["walk"]?["2026-03-23"] ?? 0) - walkWeek) < 1e-6, "\(weeks["walk"] ?? [:]) vs \(walkWeek)")
    }
}

/// A second device of an account reading the server's summaries (`GET /v1/summaries`).
struct SummaryReader {
    let server: URL
    let token: String

    init(server: URL, email: String, password: String) async throws {
        var request = URLRequest(url: server.appendingPathComponent("v1/sessions"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: ["email": email, "password": password, "device_name": "reader"])
        let (body, _) = try await URLSession.shared.data(for: request)
        self.server = server
        token = try #require((try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["token"] as? String)
    }

    /// The answer to `/v1/summaries?query` and its status.
    func answer(_ query: String) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: server.absoluteString + "/v1/summaries?" + query)!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (body, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, body)
    }

    /// The summary answered to `query` (200 expected).
    func get(_ query: String) async throws -> [String: Any] {
        let (status, body) = try await answer(query)
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }
}
