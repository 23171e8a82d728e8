public import Foundation
public import HealthModel
public import HealthReports

/// The pages, as HTML made from the reports: no script, every value also in text.
public enum Pages {
    /// What the today page's forms offer: the token they carry, the triggers and habits to choose.
    struct Forms {
        var token: String
        var triggers: [String]
        var habits: [String]
    }

    /// *today*: water against the goal, vaping, habits with streaks, energy, last night, steps;
    /// with `forms`, the forms that log a drink, a vaping session, a habit or a meal. `notice`:
    /// what the last form did; `problem`: why it stored nothing.
    /// `system`: the card on the box (``systemCard(_:outbox:refused:boundary:)``), already HTML.
    static func today(_ report: TodayReport, units: Preferences, forms: Forms? = nil, notice: String? = nil,
                      problem: String? = nil, system: String? = nil, logout: String? = nil) -> String {
        var cards: [String] = []
        let water = report.water
        var waterText = "<p class=\"big\" data-field=\"water-ml\" data-value=\"\(NumberText.plain(water.ml))\">"
            + HTML.escape(Quantities.text(millilitres: water.ml, in: units.volume)) + "</p>"
        if let goal = water.goalMl, let progress = water.progress {
            let percent = Int((progress * 100).rounded())
            waterText += "<p>of \(HTML.escape(Quantities.text(millilitres: goal, in: units.volume))) (\(percent)%)</p>"
                + "<progress max=\"\(NumberText.plain(goal))\" value=\"\(NumberText.plain(min(water.ml, goal)))\" "
                + "aria-label=\"water against the goal\">\(percent)%</progress>"
        }
        waterText += "<p>\(count(water.drinks, "drink"))</p>"
        cards.append(card("Water", waterText))

        let vaping = report.vaping
        var vapingText = "<p class=\"big\" data-field=\"vaping-sessions\" data-value=\"\(vaping.sessions)\">\(count(vaping.sessions, "session"))</p>"
        if let goal = vaping.goalAtMost { vapingText += "<p>goal: at most \(NumberText.plain(goal)) a day</p>" }
        if let since = vaping.sinceLastS, let last = vaping.lastSession {
            vapingText += "<p>last <time datetime=\"\(ISO8601.string(last))\" data-field=\"since-last-vape\" data-value=\"\(Int(since))\" "
                + "data-tick>\(HTML.escape(Durations.short(since))) ago</time></p>"
        } else {
            vapingText += "<p>none yet</p>"
        }
        cards.append(card("Vaping", vapingText))

        let energy = report.energy
        cards.append(card("Energy", """
            <p class="big" data-field="eaten-kcal" data-value="\(NumberText.plain(energy.eatenKcal))">\(NumberText.plain(energy.eatenKcal.rounded())) kcal eaten</p>
            <p data-field="burned-kcal" data-value="\(NumberText.plain(energy.burnedKcal))">\(NumberText.plain(energy.burnedKcal.rounded())) kcal burned \
            (\(count(energy.workouts, "workout")))</p>
            """))
        if let sleep = report.sleep {
            cards.append(card("Last night", """
                <p class="big" data-field="asleep-s" data-value="\(NumberText.plain(sleep.asleepS))">\(HTML.escape(Durations.short(sleep.asleepS))) asleep</p>
                <p><time datetime="\(ISO8601.string(sleep.start))">\(clock(sleep.start, report))</time> to \
                <time datetime="\(ISO8601.string(sleep.end))">\(clock(sleep.end, report))</time></p>
                """))
        } else {
            cards.append(card("Last night", "<p>no sleep recorded</p>"))
        }
        cards.append(card("Steps", "<p class=\"big\" data-field=\"steps\" data-value=\"\(NumberText.plain(report.steps))\">"
                              + "\(NumberText.plain(report.steps.rounded()))</p>"))
        if let system { cards.append(system) }

        var rows = ""
        for h in report.habits where h.name != BuiltInHabit.meal {
            var today = NumberText.plain(h.amount)
            if let unit = h.unit, h.kind != "yes_no" { today += " " + unit }
            if let target = h.target {
                today += " (\(h.direction == "at_most" ? "at most" : "at least") \(NumberText.plain(target))/\(h.targetPeriod ?? "day"))"
            }
            let state = h.met.map { $0 ? "met" : "not yet" } ?? (h.entries > 0 ? "done" : "not done yet")
            let streak = h.currentStreak.map { count($0, h.streakUnit ?? "day") } ?? "-"
            rows += "<tr data-habit=\"\(HTML.escape(h.name))\"><td>\(HTML.escape(h.name))</td><td class=\"num\">\(HTML.escape(today))</td>"
                + "<td>\(state)</td><td class=\"num\">\(streak)</td></tr>\n"
        }
        let habits = rows.isEmpty ? "<p>No habits yet.</p>" : """
            <div class="table"><table><caption>Habits today</caption>
            <thead><tr><th scope="col">Habit</th><th scope="col" class="num">Today</th><th scope="col">Goal</th><th scope="col" class="num">Streak</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            """
        var messages = ""
        if let notice { messages += "<p role=\"status\" class=\"notice\">\(HTML.escape(notice))</p>\n" }
        if let problem { messages += "<p role=\"alert\" class=\"problem\">Nothing was stored: \(HTML.escape(problem))</p>\n" }
        let body = """
            \(messages)<p class="muted">\(HTML.escape(report.date)) (\(HTML.escape(report.timeZone)))</p>
            \(forms.map { logForms($0, units: units) + "\n<p><a href=\"/entries\">Change or delete today's entries</a></p>" } ?? "")
            <div class="cards">
            \(cards.joined(separator: "\n"))
            </div>
            <h2>Habits</h2>
            \(habits)
            \(logout.map { "<form method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape($0))\">"
                + "<button type=\"submit\" class=\"delete\">Log out</button></form>" } ?? "")
            """
        return HTML.page(title: "Today", current: "/", body: body, scripts: ["/static/tick.js", "/static/live.js"])
    }

    /// *water*: the water drunk per day with the goal line, its table and a CSV link.
    public static func water(days: [DailyBars.Day], goalMl: Double?, units: Preferences, range: Int) -> String {
        let scale = Quantities.volume(1, in: units.volume)
        let shown = days.map { DailyBars.Day(label: $0.label, value: $0.value.map { ($0 * scale * 10).rounded() / 10 }) }
        let withData = days.filter { $0.value != nil }
        let chart = DailyBars(id: "water", title: "Water per day, last \(range) days",
                              description: "Water drunk each day in \(units.volume.symbol)"
                                  + (goalMl.map { ", against the daily goal of \(Quantities.text(millilitres: $0, in: units.volume))" } ?? "")
                                  + ". \(withData.count) of \(days.count) days have entries; days without any are drawn hatched.",
                              unit: units.volume.symbol, days: shown, goal: goalMl.map { ($0 * scale * 10).rounded() / 10 })
        var rows = ""
        for day in shown {
            let value = day.value.map { NumberText.plain($0) } ?? "no data"
            rows += "<tr data-day=\"\(day.label)\"><td>\(day.label)</td><td class=\"num\">\(value)</td></tr>\n"
        }
        let links = rangeLinks("/water", range)
        let body = """
            <p>\(links)</p>
            <figure>
            \(chart.svg())
            <figcaption>Source: every drink logged or imported (hydration entries). \
            <a href="/water.csv?days=\(range)" download>Download as CSV</a></figcaption>
            </figure>
            <details><summary>The data as a table</summary>
            <div class="table"><table><caption>Water per day (\(units.volume.symbol))</caption>
            <thead><tr><th scope="col">Day</th><th scope="col" class="num">\(units.volume.symbol)</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            </details>
            """
        return HTML.page(title: "Water", current: "/water", body: body)
    }

    /// The water page's data as CSV: `day,ml` (empty for a day without data).
    public static func waterCSV(days: [DailyBars.Day]) -> String {
        "day,ml\n" + days.map { "\($0.label),\($0.value.map { NumberText.plain($0) } ?? "")\n" }.joined()
    }

    /// The forms: a drink in one tap, water of any volume, a vaping session with its trigger and
    /// thoughts, a habit check-in, a meal; each with an optional time (now when empty).
    static func logForms(_ forms: Forms, units: Preferences) -> String {
        let token = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(forms.token))\">"
        func when(_ id: String) -> String {
            "<label for=\"\(id)-at\">When</label><input id=\"\(id)-at\" type=\"datetime-local\" name=\"at\">"
        }
        let taps = DrinkSize.allCases.map { size in
            """
            <form method="post" action="/log" class="tap">\(token)<input type="hidden" name="kind" value="\(size.rawValue)">\
            <button type="submit">+ \(size.rawValue) (\(HTML.escape(Quantities.text(millilitres: size.millilitres, in: units.volume))))</button></form>
            """
        }.joined(separator: "\n")
        let triggers = (["" ] + forms.triggers).map { t in
            "<option value=\"\(HTML.escape(t))\">\(t.isEmpty ? "(none)" : HTML.escape(t))</option>"
        }.joined()
        let habits = forms.habits.map { "<option value=\"\(HTML.escape($0))\">\(HTML.escape($0))</option>" }.joined()
        let habitForm = forms.habits.isEmpty ? "" : """
            <form method="post" action="/log">\(token)<input type="hidden" name="kind" value="habit">
            <fieldset><legend>A habit</legend>
            <label for="habit-name">Habit</label><select id="habit-name" name="name">\(habits)</select>
            <label for="habit-value">Value (empty: done)</label><input id="habit-value" name="value" maxlength="200">
            <input type="hidden" name="done" value="1">
            <label><input type="checkbox" name="skip" value="1"> Skipped on purpose (the streak goes on)</label>
            \(when("habit"))
            <button type="submit">Check in</button></fieldset></form>
            """
        return """
            <section class="log" aria-labelledby="log-title"><h2 id="log-title">Log</h2>
            <div class="taps">\(taps)</div>
            <details><summary>More: water, a vape, a habit, a meal</summary>
            <form method="post" action="/log">\(token)<input type="hidden" name="kind" value="water">
            <fieldset><legend>Water</legend>
            <label for="water-value">Volume</label><input id="water-value" name="value" required placeholder="330ml" maxlength="40">
            \(when("water"))
            <button type="submit">Log water</button></fieldset></form>
            <form method="post" action="/log">\(token)<input type="hidden" name="kind" value="vape">
            <fieldset><legend>A vaping session</legend>
            <label for="vape-trigger">Trigger</label><select id="vape-trigger" name="trigger">\(triggers)</select>
            <label for="vape-thoughts">Thoughts</label><input id="vape-thoughts" name="thoughts" maxlength="2000">
            \(when("vape"))
            <button type="submit">Log the session</button></fieldset></form>
            \(habitForm)
            <form method="post" action="/log">\(token)<input type="hidden" name="kind" value="meal">
            <fieldset><legend>A meal</legend>
            <label for="meal-name">Meal</label><input id="meal-name" name="name" required maxlength="200">
            <label for="meal-kcal">kcal (empty: a saved meal's)</label><input id="meal-kcal" name="kcal" inputmode="decimal" maxlength="20">
            \(when("meal"))
            <button type="submit">Log the meal</button></fieldset></form>
            </details>
            </section>
            """
    }

    static func card(_ title: String, _ body: String, attributes: String = "") -> String {
        "<section class=\"card\"\(attributes) aria-labelledby=\"card-\(title.lowercased().replacingOccurrences(of: " ", with: "-"))\">"
            + "<h2 id=\"card-\(title.lowercased().replacingOccurrences(of: " ", with: "-"))\">\(HTML.escape(title))</h2>\(body)</section>"
    }

    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    /// Local `HH:MM` in the report's time zone.
    static func clock(_ date: Date, _ report: TodayReport) -> String {
        clock(date, DayBoundary(timeZone: TimeZone(identifier: report.timeZone) ?? .current))
    }
}

/// The vaping page's figures over a range of days.
struct VapingFigures {
    /// Sessions per day; nil before the first session ever logged (no data yet), 0 after it.
    var days: [DailyBars.Day]
    /// The at-most goal per day, if set.
    var goal: Double?
    /// Sessions per local hour of the day (0 to 23) in the range.
    var hours: [Int]
    /// Sessions per trigger in the range, most first; "" for none given.
    var triggers: [(trigger: String, sessions: Int)]
    /// The longest time between two sessions in the range (and up to now), and the median.
    var longestGapS: Double?
    var medianGapS: Double?
    var sessions: Int

    /// From the range's sessions (sorted by time), the day totals and the first session ever.
    static func compute(days: [DailyTotal], firstEver: Date?, sessions: [HabitEvent], boundary: DayBoundary, now: Date,
                        goal: Double?) -> VapingFigures {
        let firstDay = firstEver.map { boundary.day(of: $0).description }
        let bars = days.map { d in
            DailyBars.Day(label: d.day, value: firstDay.map { d.day >= $0 } == true ? Double(d.entries) : nil)
        }
        var hours = [Int](repeating: 0, count: 24)
        var byTrigger: [String: Int] = [:]
        for s in sessions {
            hours[boundary.calendar.component(.hour, from: s.time)] += 1
            byTrigger[s.category ?? "", default: 0] += 1
        }
        let times = sessions.map(\.time).sorted() + [now]
        let gaps = zip(times, times.dropFirst()).map { $1.timeIntervalSince($0) }.sorted()
        return VapingFigures(days: bars, goal: goal, hours: hours,
                             triggers: byTrigger.map { ($0.key, $0.value) }.sorted { ($0.1, $1.0) > ($1.1, $0.0) },
                             longestGapS: sessions.isEmpty ? nil : gaps.last,
                             medianGapS: sessions.count < 2 ? nil : gaps[gaps.count / 2], sessions: sessions.count)
    }
}

extension Pages {
    /// *vaping*: sessions per day against the at-most goal, per hour of the day, per trigger, and
    /// the times between sessions.
    static func vaping(_ figures: VapingFigures, range: Int) -> String {
        let daily = DailyBars(id: "vaping", title: "Vaping sessions per day, last \(range) days",
                              description: "Sessions each day" + (figures.goal.map { " against the goal of at most \(NumberText.plain($0)) a day" } ?? "")
                                  + ". Days before the first session logged are drawn hatched (no data).",
                              unit: "sessions", days: figures.days, goal: figures.goal, goalIsMaximum: true)
        var hourly = DailyBars(id: "vaping-hours", title: "Sessions by hour of the day, last \(range) days",
                               description: "All sessions of the range, by the local hour they started in.", unit: "sessions",
                               days: figures.hours.enumerated().map { DailyBars.Day(label: String(format: "%02d", $0.offset), value: Double($0.element)) },
                               goal: nil)
        hourly.axisLabel = { $0 }
        let most = max(1, figures.triggers.first?.sessions ?? 1)
        let triggerRows = figures.triggers.map { t in
            let name = t.trigger.isEmpty ? "(none given)" : t.trigger
            let percent = Int((Double(t.sessions) / Double(most) * 100).rounded())
            return "<tr data-trigger=\"\(HTML.escape(t.trigger))\"><td>\(HTML.escape(name))</td><td class=\"num\">\(t.sessions)</td>"
                + "<td class=\"barcell\" aria-hidden=\"true\"><span class=\"hbar\" style=\"width:\(percent)%\"></span></td></tr>"
        }.joined(separator: "\n")
        let gaps = """
            <p data-field="sessions" data-value="\(figures.sessions)">\(count(figures.sessions, "session")) in the last \(range) days.</p>
            \(figures.longestGapS.map { "<p data-field=\"longest-gap-s\" data-value=\"\(Int($0))\">Longest time without: \(HTML.escape(Durations.short($0)))</p>" } ?? "")
            \(figures.medianGapS.map { "<p data-field=\"median-gap-s\" data-value=\"\(Int($0))\">Usual time between sessions (median): \(HTML.escape(Durations.short($0)))</p>" } ?? "")
            """
        var dayRows = ""
        for day in figures.days {
            dayRows += "<tr data-day=\"\(day.label)\"><td>\(day.label)</td><td class=\"num\">\(day.value.map { NumberText.plain($0) } ?? "no data")</td></tr>\n"
        }
        let body = """
            <p>\(rangeLinks("/vaping", range))</p>
            \(gaps)
            <figure>
            \(daily.svg())
            <figcaption>Source: every vaping session logged or imported. <a href="/vaping.csv?days=\(range)" download>Download as CSV</a></figcaption>
            </figure>
            <details><summary>The data as a table</summary>
            <div class="table"><table><caption>Vaping sessions per day</caption>
            <thead><tr><th scope="col">Day</th><th scope="col" class="num">Sessions</th></tr></thead>
            <tbody>
            \(dayRows)</tbody></table></div>
            </details>
            <figure>
            \(hourly.svg())
            </figure>
            <h2>Triggers</h2>
            \(triggerRows.isEmpty ? "<p>No sessions in the range.</p>" : """
            <div class="table"><table><caption>Sessions per trigger, last \(range) days</caption>
            <thead><tr><th scope="col">Trigger</th><th scope="col" class="num">Sessions</th><th scope="col"><span class="visually-hidden">Share</span></th></tr></thead>
            <tbody>
            \(triggerRows)
            </tbody></table></div>
            """)
            """
        return HTML.page(title: "Vaping", current: "/vaping", body: body)
    }

    /// The vaping page's days as CSV: `day,sessions` (empty before the first session).
    static func vapingCSV(_ figures: VapingFigures) -> String {
        "day,sessions\n" + figures.days.map { "\($0.label),\($0.value.map { NumberText.plain($0) } ?? "")\n" }.joined()
    }

    /// `7 days · 30 days · ...` with the current one in bold.
    static func rangeLinks(_ path: String, _ range: Int) -> String {
        [7, 30, 90, 365].map { n in
            n == range ? "<strong>\(n) days</strong>" : "<a href=\"\(path)?days=\(n)\">\(n) days</a>"
        }.joined(separator: " · ")
    }
}
