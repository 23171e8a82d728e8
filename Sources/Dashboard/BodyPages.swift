import Foundation
import HealthModel
import HealthReports

/// Body measurements over a range of days: the raw readings and, for weight, a smoothed trend.
/// The trend is an exponentially smoothed average that moves 10% of the way to each day's
/// reading (a reading d days after the last moves it 1 - 0.9^d of the way), so a day's water
/// weight barely moves it and a real change shows within two weeks.
struct BodySeries: Equatable {
    struct Point: Equatable {
        var time: Date
        var value: Double
        var trend: Double
    }

    var kind: MeasurementKind
    var points: [Point]

    static let smoothing = 0.9

    static func compute(_ kind: MeasurementKind, _ readings: [HealthModel.Measurement], scale: Double = 1) -> BodySeries {
        var points: [Point] = []
        for m in readings.sorted(by: { $0.time < $1.time }) {
            let value = m.value * scale
            guard let last = points.last else {
                points.append(Point(time: m.time, value: value, trend: value))
                continue
            }
            let days = max(0, m.time.timeIntervalSince(last.time) / 86400)
            let keep = pow(smoothing, max(days, 1.0 / 24))
            points.append(Point(time: m.time, value: value, trend: last.trend + (1 - keep) * (value - last.trend)))
        }
        return BodySeries(kind: kind, points: points)
    }

    /// The trend's change per week over its last 28 days (a least-squares line through the
    /// trend points of that time), nil with fewer than two points in it.
    var weeklyChange: Double? {
        guard let last = points.last else { return nil }
        let recent = points.filter { last.time.timeIntervalSince($0.time) <= 28 * 86400 }
        guard recent.count >= 2 else { return nil }
        let xs = recent.map { $0.time.timeIntervalSince(last.time) / 86400 }, ys = recent.map(\.trend)
        let mx = xs.reduce(0, +) / Double(xs.count), my = ys.reduce(0, +) / Double(ys.count)
        let sxx = xs.reduce(0) { $0 + ($1 - mx) * ($1 - mx) }
        guard sxx > 0 else { return nil }
        let sxy = zip(xs, ys).reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
        return sxy / sxx * 7
    }

    /// Where the trend stands against a goal.
    enum Outlook: Equatable {
        /// Within 0.1 of the goal.
        case reached
        /// At the current weekly change the trend reaches the goal on this day.
        case reaches(Date)
        /// Steady, moving away from the goal, or more than two years away at this rate.
        case notOnCourse
        /// Too few readings for a rate.
        case unknown
    }

    /// When the trend reaches `goal` at its ``weeklyChange``, projected in a straight line from
    /// the last trend point.
    func outlook(goal: Double) -> Outlook {
        guard let last = points.last else { return .unknown }
        let gap = goal - last.trend
        if abs(gap) < 0.1 { return .reached }
        guard let weekly = weeklyChange else { return .unknown }
        guard weekly != 0, (gap < 0) == (weekly < 0) else { return .notOnCourse }
        let days = gap / weekly * 7
        guard days <= 730 else { return .notOnCourse }
        return .reaches(last.time.addingTimeInterval(days * 86400))
    }
}

extension Pages {
    /// The kinds the body page shows, besides weight, when there are readings.
    static let bodyKinds: [MeasurementKind] = [.bodyFat, .muscleMass, .bodyWater, .bmi, .restingHeartRate, .hrv, .spo2, .respiratoryRate, .temperature]

    /// *body*: weight with its raw readings and smoothed trend, and the other body measurements.
    static func body(weight: BodySeries, others: [BodySeries], goal: Double? = nil, units: Preferences, range: Int, since: Date, now: Date,
                     boundary: DayBoundary? = nil) -> String {
        let span = now.timeIntervalSince(since)
        let step = [1.0, 2, 7, 14, 30, 61, 91].first { span / 86400 / $0 <= 7 } ?? 91
        let ticks = stride(from: 0.0, through: span, by: step * 86400).map { x in
            (x: x, label: String(ISO8601.string(since.addingTimeInterval(x)).prefix(10).suffix(5)))
        }
        func chart(_ series: BodySeries, id: String, title: String, unit: String, goal: Double? = nil) -> String {
            let raw = series.points.map { ChartPoint(x: $0.time.timeIntervalSince(since), y: $0.value) }
            let trend = series.points.map { ChartPoint(x: $0.time.timeIntervalSince(since), y: ($0.trend * 100).rounded() / 100) }
            let gap = 14 * 86400.0
            let svg = TimeSeriesChart(id: id, title: title,
                                      description: "\(series.points.count) readings in the last \(range) days (dots) and their smoothed trend (line); "
                                          + "the line breaks where two readings are more than 14 days apart.", unit: unit,
                                      lines: [.init(style: "raw", runs: [raw], dots: true),
                                              .init(style: "trend", runs: TimeSeriesChart.runs(trend, gap: gap))],
                                      xMax: span, xTicks: ticks, goal: goal.map { (value: $0, label: "goal \(NumberText.plain($0))") }).svg()
            return "<figure data-kind=\"\(series.kind.rawValue)\" data-readings=\"\(series.points.count)\">\n\(svg)\n</figure>"
        }
        var weightPart = "<p>No weight readings in the last \(range) days.</p>"
        if let last = weight.points.last {
            let unit = units.mass.symbol
            let change = weight.weeklyChange.map { c -> String in
                let rounded = (abs(c) * 100).rounded() / 100
                return rounded == 0 ? ", steady" : ", \(c < 0 ? "falling" : "rising") \(NumberText.plain(rounded)) \(unit) a week"
            } ?? ""
            var outlook = ""
            if let goal {
                let goalText = "Goal \(NumberText.plain(goal)) \(unit)"
                switch weight.outlook(goal: goal) {
                case .reached:
                    outlook = "<p data-field=\"goal\" data-outlook=\"reached\">\(goalText): the trend is there.</p>"
                case .reaches(let date):
                    let day = (boundary ?? .midnight(in: TimeZone(identifier: "UTC")!)).day(of: date)
                    let weeks = Int((date.timeIntervalSince(now) / 86400 / 7).rounded())
                    outlook = "<p data-field=\"goal\" data-outlook=\"reaches\" data-value=\"\(day)\">\(goalText): at this rate the trend "
                        + "reaches it around <time datetime=\"\(day)\">\(day)</time>\(weeks > 0 ? " (in about \(weeks) week\(weeks == 1 ? "" : "s"))" : "").</p>"
                case .notOnCourse:
                    outlook = "<p data-field=\"goal\" data-outlook=\"not-on-course\">\(goalText): at this rate the trend does not reach it "
                        + "within two years.</p>"
                case .unknown:
                    outlook = "<p data-field=\"goal\" data-outlook=\"unknown\">\(goalText): too few readings to tell when the trend reaches it.</p>"
                }
            }
            weightPart = """
                <p class="big" data-field="weight-trend" data-value="\(NumberText.plain((last.trend * 100).rounded() / 100))">\
                Trend \(NumberText.plain((last.trend * 10).rounded() / 10)) \(unit)\(change)</p>
                <p class="muted">Last reading \(NumberText.plain(last.value)) \(unit) on \(String(ISO8601.string(last.time).prefix(10))).</p>
                \(outlook)
                \(chart(weight, id: "weight", title: "Weight, last \(range) days", unit: unit, goal: goal))
                """
        }
        var rows = ""
        for series in [weight] + others {
            guard let last = series.points.last else { continue }
            let values = series.points.map(\.value)
            let unit = series.kind == .weight ? units.mass.symbol : series.kind.unit
            rows += "<tr data-kind=\"\(series.kind.rawValue)\"><td>\(series.kind.rawValue.replacingOccurrences(of: "_", with: " "))</td>"
                + "<td class=\"num\">\(NumberText.plain(last.value)) \(HTML.escape(unit))</td>"
                + "<td class=\"num\">\(NumberText.plain(values.min()!))</td><td class=\"num\">\(NumberText.plain(values.max()!))</td>"
                + "<td class=\"num\">\(values.count)</td></tr>\n"
        }
        let otherCharts = others.filter { $0.points.count >= 2 }.map { s in
            chart(s, id: "body-\(s.kind.rawValue)", title: "\(s.kind.rawValue.replacingOccurrences(of: "_", with: " ").capitalized), last \(range) days",
                  unit: s.kind.unit)
        }.joined(separator: "\n")
        let body = """
            <p>\(rangeLinks("/body", range))</p>
            \(weightPart)
            \(otherCharts)
            <h2>Readings</h2>
            \(rows.isEmpty ? "<p>No body measurements in the range.</p>" : """
            <div class="table"><table><caption>Body measurements, last \(range) days</caption>
            <thead><tr><th scope="col">Kind</th><th scope="col" class="num">Last</th><th scope="col" class="num">Lowest</th>\
            <th scope="col" class="num">Highest</th><th scope="col" class="num">Readings</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            """)
            <p><a href="/body.csv?days=\(range)" download>Every reading as CSV</a></p>
            """
        return HTML.page(title: "Body", current: "/body", body: body)
    }

    /// The body page's readings as CSV: `time,kind,value,unit,trend` (trend for weight only).
    static func bodyCSV(_ series: [BodySeries], units: Preferences) -> String {
        var out = "time,kind,value,unit,trend\n"
        for s in series {
            let unit = s.kind == .weight ? units.mass.symbol : s.kind.unit
            for p in s.points {
                out += "\(ISO8601.string(p.time)),\(s.kind.rawValue),\(NumberText.plain(p.value)),\(unit),"
                    + (s.kind == .weight ? NumberText.plain((p.trend * 1000).rounded() / 1000) : "") + "\n"
            }
        }
        return out
    }
}
