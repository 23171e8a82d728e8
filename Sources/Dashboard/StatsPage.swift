import Foundation
import HealthModel
import HealthReports

extension Pages {
    /// How many periods the stats page shows, by period (a year: every year since the first record).
    static let statsWindow: [StatsPeriod: Int] = [.day: 31, .week: 26, .month: 24, .year: 50]

    /// The periods of the window ending with the one holding `today`, oldest first: their first days.
    static func statsPeriods(_ period: StatsPeriod, today: LocalDay, firstRecord: LocalDay?) -> [LocalDay] {
        let last = period.first(of: today)
        var firsts = [last]
        let floor = firstRecord.map { period.first(of: $0) }
        while firsts.count < statsWindow[period]! {
            // Step back: the first day of the period before.
            let previous = period.first(of: firsts[0].adding(-1))
            if period == .year, let floor, previous < floor { break }
            firsts.insert(previous, at: 0)
        }
        return firsts
    }

    /// *stats*: the CLI's `stats` as a page: totals and averages per day, week, month or year,
    /// active time per period as a chart (periods without any record hatched), every figure in a table.
    static func stats(_ stats: [PeriodStats], periods: [LocalDay], period: StatsPeriod, units: Preferences) -> String {
        let byLabel = Dictionary(stats.map { ($0.period, $0) }) { a, _ in a }
        let labels = periods.map(period.label)
        var chart = DailyBars(id: "stats-active", title: "Active time per \(period.rawValue)",
                              description: "Minutes of workouts in each \(period.rawValue) of the last \(labels.count). "
                                  + "A \(period.rawValue) without any record is drawn hatched.", unit: "min",
                              days: labels.map { DailyBars.Day(label: $0, value: byLabel[$0].map { ($0.activeS / 60).rounded() }) }, goal: nil)
        if period != .day { chart.axisLabel = { label in label } }
        let links = StatsPeriod.allCases.map { p in
            p == period ? "<strong>by \(p.rawValue)</strong>" : "<a href=\"/stats?period=\(p.rawValue)\">by \(p.rawValue)</a>"
        }.joined(separator: " · ")
        var rows = ""
        for label in labels.reversed() {
            guard let s = byLabel[label] else {
                rows += "<tr data-period=\"\(label)\"><td>\(label)</td><td colspan=\"8\">no records</td></tr>\n"
                continue
            }
            let cells: [String] = [
                "\(s.workouts)", TimeSeriesChart.clock(s.activeS), km(s.distanceM), NumberText.plain(s.energyKcal.rounded()),
                s.avgSleepS.map { Durations.short($0) } ?? "-", NumberText.plain(s.steps.rounded()),
                s.avgWeightKg.map { Quantities.text(kilograms: $0, in: units.mass) } ?? "-",
                Quantities.text(millilitres: s.drinksMlPerDay.rounded(), in: units.volume), NumberText.plain((s.vapingPerDay * 10).rounded() / 10),
            ]
            rows += "<tr data-period=\"\(label)\" data-active-s=\"\(NumberText.plain(s.activeS))\" data-workouts=\"\(s.workouts)\" "
                + "data-steps=\"\(NumberText.plain(s.steps))\"><td>\(label)</td>"
                + cells.map { "<td class=\"num\">\(HTML.escape($0))</td>" }.joined() + "</tr>\n"
        }
        let body = """
            <p>\(links)</p>
            <figure>
            \(chart.svg())
            <figcaption>Source: workouts from every device and file. <a href="/stats.csv?period=\(period.rawValue)" download>Download as CSV</a></figcaption>
            </figure>
            <div class="table"><table><caption>Totals and averages per \(period.rawValue), newest first</caption>
            <thead><tr><th scope="col">\(period.rawValue.capitalized)</th><th scope="col" class="num">Workouts</th>\
            <th scope="col" class="num">Active</th><th scope="col" class="num">Distance</th><th scope="col" class="num">kcal burned</th>\
            <th scope="col" class="num">Sleep a night</th><th scope="col" class="num">Steps</th><th scope="col" class="num">Weight</th>\
            <th scope="col" class="num">Water a day</th><th scope="col" class="num">Vapes a day</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            <p class="muted">The same figures as <code>healthgate stats --period \(period.rawValue)</code>.</p>
            """
        return HTML.page(title: "Stats", current: "/stats", body: body)
    }

    static func statsCSV(_ stats: [PeriodStats]) -> String {
        "period,start,days,workouts,active_s,distance_m,energy_kcal,avg_hr,sleep_sessions,avg_sleep_s,steps,avg_weight_kg,"
            + "drinks,drinks_ml,vaping_sessions,meals,meal_kcal,habit_events\n"
            + stats.map { s in
                let o: (Double?) -> String = { $0.map { NumberText.plain($0) } ?? "" }
                return [s.period, s.start, "\(s.days)", "\(s.workouts)", o(s.activeS), o(s.distanceM), o(s.energyKcal), o(s.avgHR),
                        "\(s.sleepSessions)", o(s.avgSleepS), o(s.steps), o(s.avgWeightKg), "\(s.drinks)", o(s.drinksMl),
                        "\(s.vapingSessions)", "\(s.meals)", o(s.mealKcal), "\(s.habitEvents)"].joined(separator: ",") + "\n"
            }.joined()
    }
}
