import Foundation
import HealthModel
import HealthStore
import Testing
import TestSupport

/// `healthgate dashboard` end to end: the built binary serving a real database (the views'
/// month around Berlin's DST change), fetched over HTTP by Python's http.client; every value a
/// page shows is checked against `today --json` and against the database read by Python's
/// sqlite3 and zoneinfo, an independent reading of the same rows.
@Suite struct DashboardCLITests {
    typealias V = ViewsCLITests

    /// A dashboard on a free loopback port, as of `at`.
    final class Dashboard: @unchecked Sendable {
        let process = ChildProcess()
        let url: String

        /// `arguments`: more of `dashboard`'s options (TLS, a password, read-only).
        init(_ scratch: Scratch, at: String, listen: String = "127.0.0.1:0", arguments: [String] = [], zone: String = "Europe/Berlin") throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["TZ=\(zone)", CLI.executable, "dashboard", "--db", scratch.dbPath, "--listen", listen, "--at", at] + arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = nil
            try process.run()
            // "dashboard of PATH on http://127.0.0.1:PORT/"
            var line: [UInt8] = []
            while true {
                guard let b = out.fileHandleForReading.readData(ofLength: 1).first else { throw PeerError("the dashboard exited before listening") }
                if b == 0x0A { break }
                line.append(b)
            }
            let text = String(decoding: line, as: UTF8.self)
            guard let range = text.range(of: "http://") ?? text.range(of: "https://") ?? text.range(of: "unix:") else {
                throw PeerError("unexpected first line: \(text)")
            }
            url = String(text[range.lowerBound...])
        }

        deinit { end(process) }
    }

    struct Fetched {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// GET `path` with Python's http.client; `host` replaces the Host header.
    static func get(_ base: String, _ path: String, host: String? = nil) async throws -> Fetched {
        let script = """
            import http.client, json, sys, urllib.parse
            u = urllib.parse.urlsplit(sys.argv[1])
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            c.putrequest("GET", sys.argv[2], skip_host=len(sys.argv) > 3)
            if len(sys.argv) > 3: c.putheader("Host", sys.argv[3])
            c.endheaders()
            r = c.getresponse()
            print(json.dumps({"status": r.status, "headers": {k.lower(): v for k, v in r.getheaders()}, "body": r.read().decode()}))
            """
        let result = try await Tool.run("/usr/bin/env", ["python3", "-c", script, base, path] + (host.map { [$0] } ?? []))
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return Fetched(status: object["status"] as? Int ?? 0, headers: object["headers"] as? [String: String] ?? [:],
                       body: object["body"] as? String ?? "")
    }

    /// `data-field="NAME" data-value="V"` pairs of a page.
    static func fields(_ html: String) -> [String: Double] {
        var out: [String: Double] = [:]
        let regex = try! NSRegularExpression(pattern: #"data-field="([a-z-]+)" data-value="([-0-9.]+)""#)
        for m in regex.matches(in: html, range: NSRange(html.startIndex..., in: html)) {
            out[String(html[Range(m.range(at: 1), in: html)!])] = Double(html[Range(m.range(at: 2), in: html)!])
        }
        return out
    }

    @Test func thePagesShowWhatTheDatabaseHolds() async throws {
        let scratch = try await V.database()
        let at = "2026-04-02T21:00"
        let dashboard = try Dashboard(scratch, at: at)
        let today = try #require(try V.json(try await V.run(scratch, ["today", "--json", "--at", at]).stdout) as? [String: Any])

        let page = try await Self.get(dashboard.url, "/")
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        // Two scripts, the dashboard's own (the ticking timer, the live box card); the page is whole without them.
        #expect(page.body.components(separatedBy: "<script").count == 3 && page.body.contains("<script src=\"/static/tick.js\" defer></script>")
            && page.body.contains("<script src=\"/static/live.js\" defer></script>"))
        #expect(page.headers["content-security-policy"]?.contains("connect-src 'self'") == true)
        let fields = Self.fields(page.body)
        let water = try #require(today["water"] as? [String: Any]), energy = try #require(today["energy"] as? [String: Any])
        #expect(fields["water-ml"] == water["ml"] as? Double && fields["water-ml"] == 250)
        #expect(fields["vaping-sessions"] == Double((today["vaping"] as? [String: Any])?["sessions"] as? Int ?? -1))
        #expect(fields["since-last-vape"] == ((today["vaping"] as? [String: Any])?["since_last_s"] as? Double).map { $0.rounded(.down) })
        #expect(fields["eaten-kcal"] == energy["eaten_kcal"] as? Double && fields["burned-kcal"] == energy["burned_kcal"] as? Double)
        #expect(fields["asleep-s"] == (today["sleep"] as? [String: Any])?["asleep_s"] as? Double)
        #expect(fields["steps"] == today["steps"] as? Double)
        let habits = (today["habits"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }.filter { $0 != "meal" }
        for habit in habits { #expect(page.body.contains("data-habit=\"\(habit)\""), "\(habit)") }
        // On a database alone: the outbox from the database, no claim about devices or sync.
        let outbox = try await Tool.run("/usr/bin/env", ["python3", "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM outbox').fetchone()[0])",
                                                         scratch.dbPath])
        #expect(fields["outbox"] == Double(outbox.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) && (fields["outbox"] ?? 0) > 0)
        #expect(fields["devices-connected"] == nil && page.body.contains("served from the database alone"))

        // The water page: each day's bar (or gap) against Python's sum of the rows per Berlin day.
        let waterPage = try await Self.get(dashboard.url, "/water?days=30")
        #expect(waterPage.status == 200)
        let script = """
            import sqlite3, sys
            from collections import defaultdict
            from datetime import datetime, timedelta, date
            from zoneinfo import ZoneInfo
            z = ZoneInfo("Europe/Berlin")
            totals = defaultdict(float)
            for t, v in sqlite3.connect(sys.argv[1]).execute(
                    "SELECT time, value FROM habit_events WHERE habit = 'hydration' AND deleted = 0"):
                totals[datetime.fromisoformat(t.replace("Z", "+00:00")).astimezone(z).date()] += v
            end = date(2026, 4, 2)
            for i in range(29, -1, -1):
                d = end - timedelta(days=i)
                print(d.isoformat(), totals[d] if d in totals else "none")
            """
        let expected = try await Tool.run("/usr/bin/env", ["python3", "-c", script, scratch.dbPath])
        #expect(expected.status == 0, "\(expected.stderr)")
        let regex = try NSRegularExpression(pattern: #"<rect class="(bar(?: met)?|gap)" data-day="([0-9-]+)"(?: data-value="([0-9.]+)")?"#)
        let body = waterPage.body
        let drawn = regex.matches(in: body, range: NSRange(body.startIndex..., in: body)).map { m -> String in
            let day = String(body[Range(m.range(at: 2), in: body)!])
            let value = m.range(at: 3).location == NSNotFound ? "none" : String(body[Range(m.range(at: 3), in: body)!])
            return "\(day) \(value)"
        }
        let python = expected.stdout.split(separator: "\n").map { line -> String in
            let parts = line.split(separator: " ")
            return "\(parts[0]) \(Double(parts[1]).map { NumberText.plain($0) } ?? "none")"
        }
        #expect(drawn.count == 30 && drawn == python, "\(drawn) vs \(python)")
        #expect(body.contains("<title id=\"water-title\">") && body.contains("<desc id=\"water-desc\">"))
        // The table and the CSV hold the same days and values.
        let csv = try await Self.get(dashboard.url, "/water.csv?days=30")
        #expect(csv.status == 200 && csv.headers["content-type"] == "text/csv; charset=utf-8")
        #expect(csv.body.split(separator: "\n").dropFirst().map { $0.replacingOccurrences(of: ",", with: " ") }
                == python.map { $0.replacingOccurrences(of: " none", with: " ") })
    }

    /// The vaping page: sessions per day (hatched before the first), per hour, per trigger and
    /// the gaps, against Python's reading of the rows.
    @Test func theVapingPageCountsEverySession() async throws {
        let scratch = try await V.database()
        let dashboard = try Dashboard(scratch, at: "2026-04-02T21:00")
        let page = try await Self.get(dashboard.url, "/vaping?days=30")
        #expect(page.status == 200)
        let script = """
            import sqlite3, sys, json
            from datetime import datetime, timedelta, date
            from zoneinfo import ZoneInfo
            z = ZoneInfo("Europe/Berlin")
            rows = [(datetime.fromisoformat(t.replace("Z", "+00:00")), c) for t, c in sqlite3.connect(sys.argv[1]).execute(
                "SELECT time, category FROM habit_events WHERE habit = 'vaping' AND deleted = 0 ORDER BY time")]
            now = datetime(2026, 4, 2, 21, 0, tzinfo=z)
            end = date(2026, 4, 2)
            first = min(t.astimezone(z).date() for t, _ in rows)
            days = []
            for i in range(29, -1, -1):
                d = end - timedelta(days=i)
                days.append([d.isoformat(), None if d < first else sum(1 for t, _ in rows if t.astimezone(z).date() == d)])
            hours = [sum(1 for t, _ in rows if t.astimezone(z).hour == h) for h in range(24)]
            times = [t for t, _ in rows] + [now]
            gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
            print(json.dumps({"days": days, "hours": hours, "longest": int(max(gaps)),
                              "triggers": sorted([c or "" for _, c in rows])}))
            """
        let expected = try await Tool.run("/usr/bin/env", ["python3", "-c", script, scratch.dbPath])
        #expect(expected.status == 0, "\(expected.stderr)")
        let python = try #require(try JSONSerialization.jsonObject(with: Data(expected.stdout.utf8)) as? [String: Any])
        let body = page.body
        func bars(_ id: String) -> [String] {
            let svg = body.components(separatedBy: "id=\"\(id)\"")[1].components(separatedBy: "</svg>")[0]
            let regex = try! NSRegularExpression(pattern: #"<rect class="(?:bar(?: met)?|gap)" data-day="([0-9-]+)"(?: data-value="([0-9.]+)")?"#)
            return regex.matches(in: svg, range: NSRange(svg.startIndex..., in: svg)).map { m in
                let value = m.range(at: 2).location == NSNotFound ? "none" : String(svg[Range(m.range(at: 2), in: svg)!])
                return String(svg[Range(m.range(at: 1), in: svg)!]) + " " + value
            }
        }
        let days = (python["days"] as? [[Any]] ?? []).map { "\($0[0]) \(($0[1] as? Int).map(String.init) ?? "none")" }
        #expect(bars("vaping") == days && days.count == 30, "\(bars("vaping")) vs \(days)")
        let hours = (python["hours"] as? [Int] ?? []).enumerated().map { String(format: "%02d", $0.offset) + " \($0.element)" }
        #expect(bars("vaping-hours") == hours)
        #expect(Self.fields(body)["longest-gap-s"] == Double(python["longest"] as? Int ?? -1))
        let triggers = try NSRegularExpression(pattern: #"data-trigger="([^"]*)"><td>[^<]*</td><td class="num">([0-9]+)"#)
        let shown = triggers.matches(in: body, range: NSRange(body.startIndex..., in: body)).flatMap { m in
            Array(repeating: String(body[Range(m.range(at: 1), in: body)!]), count: Int(body[Range(m.range(at: 2), in: body)!])!)
        }
        #expect(shown.sorted() == (python["triggers"] as? [String] ?? []), "\(shown)")
        let csv = try await Self.get(dashboard.url, "/vaping.csv?days=30")
        #expect(csv.body.split(separator: "\n").dropFirst().map { $0.replacingOccurrences(of: ",", with: " ") }
                == days.map { $0.replacingOccurrences(of: " none", with: " ") })
    }

    /// The habit pages: the list with streaks as `today` has them, and one habit's calendar,
    /// each day against Python's reading of the rows.
    @Test func theHabitPagesShowStreaksAndEveryDay() async throws {
        let scratch = try await V.database()
        let at = "2026-04-02T21:00"
        let dashboard = try Dashboard(scratch, at: at)
        let today = try #require(try V.json(try await V.run(scratch, ["today", "--json", "--at", at]).stdout) as? [String: Any])
        let stretch = try #require((today["habits"] as? [[String: Any]])?.first { $0["name"] as? String == "stretch" })
        let list = try await Self.get(dashboard.url, "/habits")
        #expect(list.status == 200 && list.body.contains("data-habit=\"stretch\"") && list.body.contains("href=\"/habit?name=stretch\""))
        #expect(!list.body.contains("data-habit=\"hydration\""))
        let page = try await Self.get(dashboard.url, "/habit?name=stretch")
        #expect(page.status == 200)
        let fields = Self.fields(page.body)
        #expect(fields["current-streak"] == Double(stretch["current_streak"] as? Int ?? -1) && fields["current-streak"] == 32)
        #expect(fields["longest-streak"] == Double(stretch["longest_streak"] as? Int ?? -1))
        let script = """
            import sqlite3, sys
            from datetime import datetime
            from zoneinfo import ZoneInfo
            z = ZoneInfo("Europe/Berlin")
            days = {}
            for (t,) in sqlite3.connect(sys.argv[1]).execute("SELECT time FROM habit_events WHERE habit = 'stretch' AND deleted = 0"):
                d = datetime.fromisoformat(t.replace("Z", "+00:00")).astimezone(z).date().isoformat()
                days[d] = days.get(d, 0) + 1
            for d in sorted(days): print(d, days[d])
            """
        let expected = try await Tool.run("/usr/bin/env", ["python3", "-c", script, scratch.dbPath])
        let python = Dictionary(uniqueKeysWithValues: expected.stdout.split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            return (String(parts[0]), Int(parts[1])!)
        })
        let regex = try NSRegularExpression(pattern: #"<rect class="day ([a-z]+)" data-day="([0-9-]+)" data-value="([0-9.]+)""#)
        let body = page.body
        let cells = regex.matches(in: body, range: NSRange(body.startIndex..., in: body)).map { m in
            (state: String(body[Range(m.range(at: 1), in: body)!]), day: String(body[Range(m.range(at: 2), in: body)!]),
             value: Double(body[Range(m.range(at: 3), in: body)!])!)
        }
        // 53 weeks up to today (Thursday 2 April): 52 whole weeks and this one's first four days.
        #expect(cells.count == 52 * 7 + 4 && cells.last?.day == "2026-04-02" && cells.first?.day == "2025-03-31")
        #expect(python.count == 32)
        for cell in cells {
            let entries = python[cell.day] ?? 0
            let expected = cell.day < "2026-03-01" ? "before" : entries > 0 ? "met" : "none"
            #expect(cell.state == expected && cell.value == Double(entries), "\(cell)")
        }
        #expect(try await Self.get(dashboard.url, "/habit?name=nope").status == 404)
        #expect(try await Self.get(dashboard.url, "/habit").status == 400)
    }

    @Test func hostileRequestsAreRefused() async throws {
        let scratch = try await V.database()
        // HTML in a habit's name and note, shown on the today page.
        let name = "<img src=x onerror=alert(1)>"
        try await scratch.store().write([
            V.definition(name, .habit(HabitDefinition(valueKind: .yesNo))),
            V.habit(name, V.local(4, 2, 9), note: "<script>alert(2)</script>"),
        ])
        let dashboard = try Dashboard(scratch, at: "2026-04-02T21:00")
        let page = try await Self.get(dashboard.url, "/")
        #expect(page.status == 200)
        #expect(!page.body.contains(name) && page.body.contains("&lt;img src=x onerror=alert(1)&gt;"))
        // A page reached through another name (DNS rebinding): refused.
        let forged = try await Self.get(dashboard.url, "/", host: "evil.example:8470")
        #expect(forged.status == 421 && !forged.body.contains("Today"))
        #expect(try await Self.get(dashboard.url, "/", host: "localhost").status == 200)
        // Outside the routes, a bad parameter.
        #expect(try await Self.get(dashboard.url, "/../../etc/passwd").status == 404)
        #expect(try await Self.get(dashboard.url, "/nope").status == 404)
        let bad = try await Self.get(dashboard.url, "/water?days=1000000")
        #expect(bad.status == 400 && bad.body.contains("days must be one of 7, 30, 90, 365"), "\(bad.body)")
    }

    /// POST with Python's http.client: the form's fields, extra headers.
    static func post(_ base: String, _ path: String, form: [(String, String)], headers: [String: String] = [:],
                     rawBody: String? = nil) async throws -> Fetched {
        let script = """
            import http.client, json, sys, urllib.parse
            u = urllib.parse.urlsplit(sys.argv[1])
            spec = json.loads(sys.argv[3])
            body = spec["raw"] if spec["raw"] is not None else urllib.parse.urlencode([tuple(p) for p in spec["form"]])
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            c.request("POST", sys.argv[2], body=body.encode(), headers=dict({"Content-Type": "application/x-www-form-urlencoded"}, **spec["headers"]))
            r = c.getresponse()
            print(json.dumps({"status": r.status, "headers": {k.lower(): v for k, v in r.getheaders()}, "body": r.read().decode()}))
            """
        let spec: [String: Any] = ["form": form.map { [$0.0, $0.1] }, "headers": headers, "raw": rawBody as Any? ?? NSNull()]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
        let result = try await Tool.run("/usr/bin/env", ["python3", "-c", script, base, path, json])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return Fetched(status: object["status"] as? Int ?? 0, headers: object["headers"] as? [String: String] ?? [:],
                       body: object["body"] as? String ?? "")
    }

    /// The forms' token, as a page carries it.
    static func token(_ page: String) throws -> String {
        let regex = try NSRegularExpression(pattern: #"name="csrf" value="([0-9a-f]{64})""#)
        let m = try #require(regex.firstMatch(in: page, range: NSRange(page.startIndex..., in: page)))
        return String(page[Range(m.range(at: 1), in: page)!])
    }

    static func hydration(_ scratch: Scratch) async throws -> Int {
        try await scratch.store().habitEvents(in: DateRange()).filter { $0.habit == "hydration" }.count
    }

    @Test func aFormLogsThroughTheEntryBuilderOnlyWithItsToken() async throws {
        let scratch = try await V.database()
        let dashboard = try Dashboard(scratch, at: "2026-04-02T21:00")
        let token = try Self.token(try await Self.get(dashboard.url, "/").body)
        let before = try await Self.hydration(scratch)

        // A glass in one tap: stored, then back to the page, which says so once.
        let posted = try await Self.post(dashboard.url, "/log", form: [("csrf", token), ("kind", "glass")],
                                         headers: ["Origin": dashboard.url.replacingOccurrences(of: "/$", with: "", options: .regularExpression)])
        #expect(posted.status == 303, "\(posted.body)")
        let location = try #require(posted.headers["location"])
        #expect(try await Self.hydration(scratch) == before + 1)
        let after = try await Self.get(dashboard.url, location)
        #expect(after.body.contains("role=\"status\"") && after.body.contains("Logged "), "\(after.body.prefix(600))")
        #expect(abs((Self.fields(after.body)["water-ml"] ?? 0) - (250 + DrinkSize.glass.millilitres)) < 0.1)
        #expect(!(try await Self.get(dashboard.url, location).body.contains("role=\"status\"")))

        // Refused, nothing stored: no token, another token, from another site, a future time,
        // a kind the pages do not log, a form too large, something not a form.
        let refusals: [(Fetched, Int, String?)] = [
            (try await Self.post(dashboard.url, "/log", form: [("kind", "glass")]), 400, "not a form of the dashboard"),
            (try await Self.post(dashboard.url, "/log", form: [("csrf", String(repeating: "0", count: 64)), ("kind", "glass")]), 403, "out of date"),
            (try await Self.post(dashboard.url, "/log", form: [("csrf", token), ("kind", "glass")], headers: ["Origin": "http://evil.example"]),
             403, "another site"),
            (try await Self.post(dashboard.url, "/log", form: [("csrf", token), ("kind", "glass")], headers: ["Sec-Fetch-Site": "cross-site"]),
             403, "another site"),
            (try await Self.post(dashboard.url, "/log", form: [("csrf", token), ("kind", "water"), ("value", "330ml"), ("at", "2026-04-03T08:00")]),
             422, "2026-04-03 08:00 is in the future"),
            (try await Self.post(dashboard.url, "/log", form: [("csrf", token), ("kind", "weight"), ("value", "70kg")]), 422, "cannot log &#39;weight&#39;"),
            (try await Self.post(dashboard.url, "/log", form: [("csrf", token), ("kind", "glass"), ("thoughts", String(repeating: "x", count: 20_000))]),
             413, nil),
            (try await Self.post(dashboard.url, "/log", form: [], rawBody: "%%%&&&==="), 400, "not a form of the dashboard"),
        ]
        for (response, status, text) in refusals {
            #expect(response.status == status && text.map(response.body.contains) != false, "\(status) \(text): \(response.status) \(response.body.prefix(300))")
        }
        #expect(try await Self.hydration(scratch) == before + 1)
        // The reason is shown on the page, escaped, as an alert.
        let future = refusals[4].0.body
        #expect(future.contains("role=\"alert\"") && future.contains("Nothing was stored: 2026-04-03 08:00 is in the future"))
    }

    @Test func itListensOnLoopbackOnly() async throws {
        let scratch = try Scratch()
        let result = try await Tool.run(CLI.executable, ["dashboard", "--db", scratch.dbPath, "--listen", "0.0.0.0:8470"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--listen: '0.0.0.0:8470' is not on loopback"), "\(result.stderr)")
        let malformed = try await Tool.run(CLI.executable, ["dashboard", "--db", scratch.dbPath, "--listen", "8470"])
        #expect(malformed.status != 0 && malformed.stderr.contains("--listen: '8470' is not ADDRESS:PORT"), "\(malformed.stderr)")
    }
}
