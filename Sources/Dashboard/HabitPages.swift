import Foundation
import HealthModel
import HealthReports
import HealthStore

/// One habit's last year, day by day, for its calendar.
struct HabitFigures {
    struct Cell {
        /// `2026-03-29`.
        var day: String
        /// What the day's entries amount to (the sum for a numeric habit, else their number).
        var amount: Double
        var entries: Int
        /// Met by the day's entries (a daily goal); nil for a weekly goal, none, or a day before the habit started.
        var met: Bool?
        /// Before the habit's start (its definition or first entry): not counted.
        var before: Bool
        /// After now (the rest of the current week).
        var future: Bool
        /// Skipped on purpose (a `skipped` mark) and not met: passed over, neither met nor missed.
        var skipped = false
    }

    var name: String
    var goal: HabitGoal?
    var unit: String?
    var progress: HabitProgress?
    /// Whole ISO weeks, Monday first, oldest first: 7 cells each.
    var weeks: [[Cell]]
}

extension Pages {
    /// *habits*: every habit with its goal and streaks, each a link to its own page.
    static func habits(_ progress: [HabitProgress], names: [String], goals: [String: HabitGoal]) -> String {
        let byKey = Dictionary(progress.map { (Definition.key($0.habit), $0) }) { a, _ in a }
        var rows = ""
        for name in names {
            let p = byKey[Definition.key(name)]
            let link = "/habit?name=" + (name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            rows += "<tr data-habit=\"\(HTML.escape(name))\"><td><a href=\"\(HTML.escape(link))\">\(HTML.escape(name))</a></td>"
                + "<td>\(HTML.escape(goals[Definition.key(name)].map(goalText) ?? "no goal"))</td>"
                + "<td class=\"num\">\(p.map { count($0.currentStreak, $0.unit) } ?? "-")</td>"
                + "<td class=\"num\">\(p.map { count($0.longestStreak, $0.unit) } ?? "-")</td>"
                + "<td class=\"num\">\(p?.completionRate.map { "\(Int(($0 * 100).rounded()))%" } ?? "-")</td></tr>\n"
        }
        let body = rows.isEmpty ? "<p>No habits yet: <code>healthgate define habit NAME</code>.</p>" : """
            <div class="table"><table><caption>Habits, their goals and streaks</caption>
            <thead><tr><th scope="col">Habit</th><th scope="col">Goal</th><th scope="col" class="num">Streak</th>\
            <th scope="col" class="num">Longest</th><th scope="col" class="num">Completion</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            """
        return HTML.page(title: "Habits", current: "/habits", body: body)
    }

    static func goalText(_ goal: HabitGoal) -> String {
        guard let target = goal.target else { return "done each day" }
        return "\(target.direction == .atMost ? "at most" : "at least") \(NumberText.plain(target.amount)) per \(target.period.rawValue)"
    }

    /// *habit*: its goal card (streaks, completion), its calendar of the last year, and the
    /// completion per week and per month.
    static func habit(_ figures: HabitFigures) -> String {
        let p = figures.progress
        let card = """
            <div class="cards">
            <section class="card" aria-labelledby="goal-title"><h2 id="goal-title">Goal</h2>
            <p class="big">\(HTML.escape(figures.goal.map(goalText) ?? "no goal"))</p>
            \(p.map { "<p>since \(HTML.escape($0.since ?? "-"))</p>" } ?? "")</section>
            <section class="card" aria-labelledby="streak-title"><h2 id="streak-title">Streak</h2>
            <p class="big" data-field="current-streak" data-value="\(p?.currentStreak ?? 0)">\(p.map { count($0.currentStreak, $0.unit) } ?? "-")</p>
            <p data-field="longest-streak" data-value="\(p?.longestStreak ?? 0)">longest \(p.map { count($0.longestStreak, $0.unit) } ?? "-")</p></section>
            <section class="card" aria-labelledby="done-title"><h2 id="done-title">Completion</h2>
            <p class="big" data-field="completion" data-value="\(p?.completionRate.map { NumberText.plain(($0 * 1000).rounded() / 1000) } ?? "")">\
            \(p?.completionRate.map { "\(Int(($0 * 100).rounded()))%" } ?? "-")</p>
            <p>\(p.map { "\($0.met) of \(count($0.counted, $0.unit)) met" } ?? "no goal to meet")</p></section>
            </div>
            """
        // Months: met days out of the days counted (a daily goal), or the entries.
        var months: [(String, met: Int, counted: Int, entries: Int)] = []
        for cell in figures.weeks.joined() where !cell.before && !cell.future {
            let month = String(cell.day.prefix(7))
            if months.last?.0 != month { months.append((month, 0, 0, 0)) }
            months[months.count - 1].entries += cell.entries
            if let met = cell.met {
                months[months.count - 1].counted += 1
                if met { months[months.count - 1].met += 1 }
            }
        }
        let daily = figures.goal?.period == .day
        let monthRows = months.suffix(12).map { m in
            "<tr data-month=\"\(m.0)\"><td>\(m.0)</td><td class=\"num\">\(m.entries)</td>"
                + (daily ? "<td class=\"num\">\(m.met) of \(m.counted)</td>" : "") + "</tr>"
        }.joined(separator: "\n")
        let body = """
            \(card)
            <figure>
            \(heatmap(figures))
            <figcaption>Each square is a day, Monday at the top: \
            <span class="key met"></span> goal met, <span class="key some"></span> entries (goal not met or none), \
            <span class="key none"></span> nothing, <span class="key skipped"></span> skipped (neither met nor missed), \
            blank before the habit started.</figcaption>
            </figure>
            <div class="table"><table><caption>By month, the last 12</caption>
            <thead><tr><th scope="col">Month</th><th scope="col" class="num">Entries</th>\(daily ? "<th scope=\"col\" class=\"num\">Days met</th>" : "")</tr></thead>
            <tbody>
            \(monthRows)
            </tbody></table></div>
            """
        return HTML.page(title: figures.name, current: "/habits", body: body)
    }

    /// The calendar: one column per week, one square per day, coloured by what the day did.
    static func heatmap(_ figures: HabitFigures) -> String {
        let size = 11.0, gap = 2.0, left = 30.0, top = 18.0
        let width = Int(left + Double(figures.weeks.count) * (size + gap) + 4), height = Int(top + 7 * (size + gap) + 4)
        var out = SVGChart.open(id: "calendar", width: width, height: Double(height), title: "\(figures.name): the last \(figures.weeks.count) weeks",
                                description: "One square per day, \(figures.weeks.joined().filter { $0.met == true }.count) days with the goal met, "
                                    + "\(figures.weeks.joined().filter { $0.entries > 0 }.count) days with entries.")
        for (row, name) in ["Mon", "", "Wed", "", "Fri", "", "Sun"].enumerated() where !name.isEmpty {
            out += "<text x=\"0\" y=\"\(DailyBars.f(top + Double(row) * (size + gap) + size - 1))\" style=\"font-size:9px\">\(name)</text>"
        }
        var lastMonth = ""
        for (column, week) in figures.weeks.enumerated() {
            let x = left + Double(column) * (size + gap)
            if let first = week.first, String(first.day.prefix(7)) != lastMonth {
                lastMonth = String(first.day.prefix(7))
                out += "<text x=\"\(DailyBars.f(x))\" y=\"10\" style=\"font-size:9px\">\(lastMonth.suffix(2))</text>"
            }
            for (row, cell) in week.enumerated() where !cell.future {
                let state = cell.before ? "before" : cell.met == true ? "met" : cell.skipped ? "skipped" : cell.entries > 0 ? "some" : "none"
                out += "<rect class=\"day \(state)\" data-day=\"\(cell.day)\" data-value=\"\(NumberText.plain(cell.amount))\" "
                    + "x=\"\(DailyBars.f(x))\" y=\"\(DailyBars.f(top + Double(row) * (size + gap)))\" width=\"\(size)\" height=\"\(size)\" rx=\"2\">"
                    + "<title>\(cell.day): \(cell.entries == 0 ? "nothing" : NumberText.plain(cell.amount) + (figures.unit.map { " " + HTML.escape($0) } ?? ""))"
                    + "\(cell.met == true ? ", goal met" : cell.skipped ? ", skipped" : "")</title></rect>"
            }
            out += "\n"
        }
        return out + "</svg>"
    }
}
