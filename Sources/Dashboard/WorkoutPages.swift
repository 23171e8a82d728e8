import Foundation
import HealthModel
import HealthReports
import HealthStore

/// Time in heart-rate zones: five zones of 10% of a maximum heart rate each, from 50% up, and
/// the time below the first. A sample counts for the time until the next one, never for more
/// than the gap that still joins two samples (a pause counts for nothing).
struct HeartRateZones: Equatable {
    /// The zones' lower bounds as a share of the maximum.
    static let lower = [0.5, 0.6, 0.7, 0.8, 0.9]

    var maxHeartRate: Int
    /// Seconds below zone 1, then in zones 1 to 5.
    var seconds: [Double]

    /// The zone of a heart rate: 0 below zone 1, else 1 to 5 (5 also above the maximum).
    static func zone(_ heartRate: Int, max: Int) -> Int {
        let share = Double(heartRate) / Double(max)
        return lower.lastIndex { share >= $0 }.map { $0 + 1 } ?? 0
    }

    static func compute(_ samples: [Sample], maxHeartRate: Int, gap: Double) -> HeartRateZones {
        var seconds = [Double](repeating: 0, count: lower.count + 1)
        let rated = samples.filter { $0.heartRate != nil }
        for (a, b) in zip(rated, rated.dropFirst()) {
            let dt = b.time.timeIntervalSince(a.time)
            guard dt > 0, dt <= gap, let hr = a.heartRate else { continue }
            seconds[zone(hr, max: maxHeartRate)] += dt
        }
        return HeartRateZones(maxHeartRate: maxHeartRate, seconds: seconds)
    }
}

/// One workout made ready to draw: each metric it has as runs against elapsed time, reduced to
/// about a point per pixel; its zones; its route.
struct WorkoutFigures {
    struct Series {
        var key: String
        var title: String
        var unit: String
        var runs: [[ChartPoint]]
        /// Over every sample with the metric (not the reduced runs).
        var samples: Int
        var low: Double
        var mean: Double
        var high: Double
    }

    /// The metrics a workout's samples may carry, in the order the page shows them.
    static let metrics: [(key: String, title: String, unit: String, value: @Sendable (Sample) -> Double?)] = [
        ("heart_rate", "Heart rate", "bpm", { $0.heartRate.map(Double.init) }),
        ("speed", "Speed", "km/h", { $0.speedMps.map { $0 * 3.6 } }),
        ("power", "Power", "W", { $0.powerW }),
        ("cadence", "Cadence", "per min", { $0.cadence }),
        ("altitude", "Altitude", "m", { $0.altitudeM }),
    ]

    var workout: Workout
    var duration: Double
    var series: [Series]
    var zones: HeartRateZones?
    /// Where the zones' maximum came from, in words.
    var zonesBasis: String?
    var route: [RouteMap.Point]
    /// The metric colouring the route (a key of ``metrics``), nil when it has none.
    var routeMetric: String?

    /// `columns`: the chart's plot width in pixels. `maxHeartRate`: the highest heart rate the
    /// user reached (zones are shares of it). `colour`: the metric the route is coloured by
    /// (speed, else heart rate, when nil or absent).
    static func compute(_ workout: Workout, maxHeartRate: (value: Int, basis: String)?, colour: String? = nil,
                        columns: Int = 572) -> WorkoutFigures {
        let start = workout.start
        let samples = workout.samples.sorted { $0.time < $1.time }
        let duration = max(workout.end.timeIntervalSince(start), samples.last.map { $0.time.timeIntervalSince(start) } ?? 0)
        let gap = TimeSeriesChart.gap(of: samples.map { $0.time.timeIntervalSince(start) })
        var series: [Series] = []
        for metric in metrics {
            let points = samples.compactMap { s in metric.value(s).map { ChartPoint(x: s.time.timeIntervalSince(start), y: $0) } }
            guard !points.isEmpty else { continue }
            let runs = TimeSeriesChart.runs(points, gap: gap).map { run in
                let extent = (run.last?.x ?? 0) - (run.first?.x ?? 0)
                return Downsample.minMax(run, columns: max(1, Int(Double(columns) * extent / max(duration, 1))))
            }
            let values = points.map(\.y)
            series.append(Series(key: metric.key, title: metric.title, unit: metric.unit, runs: runs, samples: points.count,
                                 low: values.min()!, mean: values.reduce(0, +) / Double(values.count), high: values.max()!))
        }
        let zones = maxHeartRate.flatMap { max in
            samples.contains { $0.heartRate != nil } ? HeartRateZones.compute(samples, maxHeartRate: max.value, gap: gap) : nil
        }
        let keys = series.map(\.key)
        let routeMetric = colour.flatMap { keys.contains($0) ? $0 : nil } ?? ["speed", "heart_rate"].first { keys.contains($0) }
        let value = metrics.first { $0.key == routeMetric }?.value
        let route = samples.compactMap { s -> RouteMap.Point? in
            guard let lat = s.latitude, let lon = s.longitude else { return nil }
            return RouteMap.Point(latitude: lat, longitude: lon, value: value?(s))
        }
        return WorkoutFigures(workout: workout, duration: duration, series: series, zones: zones, zonesBasis: maxHeartRate?.basis,
                              route: route, routeMetric: route.isEmpty ? nil : routeMetric)
    }
}

extension Pages {
    /// `2026-03-29 07:15`, local.
    static func localTime(_ date: Date, _ boundary: DayBoundary) -> String {
        let c = boundary.calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0)
    }

    static func km(_ metres: Double?) -> String { metres.map { NumberText.plain(($0 / 10).rounded() / 100) + " km" } ?? "-" }

    /// *workouts*: the workouts of a period, of one sport or all, their minutes per day, a table.
    static func workouts(_ list: [WorkoutSummary], days: [DailyBars.Day], sports: [String], sport: String?, range: Int,
                         boundary: DayBoundary) -> String {
        let options = ([("", "every sport")] + sports.map { ($0, $0) }).map { value, name in
            "<option value=\"\(HTML.escape(value))\"\(value == (sport ?? "") ? " selected" : "")>\(HTML.escape(name))</option>"
        }.joined()
        let ranges = DashboardServer.ranges.map { n in
            "<option value=\"\(n)\"\(n == range ? " selected" : "")>\(n) days</option>"
        }.joined()
        let chart = DailyBars(id: "workout-minutes", title: "Minutes of \(sport ?? "every sport") per day, last \(range) days",
                              description: "Workout time each day (elapsed, by the day each workout started). "
                                  + "\(count(list.count, "workout")) in the range.", unit: "min", days: days, goal: nil)
        var rows = ""
        for w in list.reversed() {
            let start = ISO8601.parse(w.start) ?? Date(timeIntervalSince1970: 0)
            rows += "<tr data-workout=\"\(HTML.escape(w.id))\"><td><a href=\"/workout?id=\(HTML.escape(w.id))\">"
                + "\(localTime(start, boundary))</a></td><td>\(HTML.escape(w.sport))</td>"
                + "<td class=\"num\">\(TimeSeriesChart.clock(w.elapsedS))</td><td class=\"num\">\(km(w.distanceM))</td>"
                + "<td class=\"num\">\(w.energyKcal.map { NumberText.plain($0.rounded()) } ?? "-")</td>"
                + "<td class=\"num\">\(w.avgHR.map(String.init) ?? "-")</td></tr>\n"
        }
        let query = "days=\(range)" + (sport.map { "&amp;sport=" + HTML.escape(urlQueryValue($0)) } ?? "")
        let body = """
            <form method="get" action="/workouts" class="filters">
            <label for="sport">Sport</label> <select id="sport" name="sport">\(options)</select>
            <label for="days">Period</label> <select id="days" name="days">\(ranges)</select>
            <button type="submit">Show</button></form>
            <figure>
            \(chart.svg())
            <figcaption>Source: every workout recorded or imported. <a href="/workouts.csv?\(query)" download>Download as CSV</a></figcaption>
            </figure>
            \(rows.isEmpty ? "<p>No workouts in the period.</p>" : """
            <div class="table"><table><caption>Workouts, newest first</caption>
            <thead><tr><th scope="col">Start</th><th scope="col">Sport</th><th scope="col" class="num">Time</th>\
            <th scope="col" class="num">Distance</th><th scope="col" class="num">kcal</th><th scope="col" class="num">Avg HR</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            """)
            """
        return HTML.page(title: "Workouts", current: "/workouts", body: body)
    }

    static func workoutsCSV(_ list: [WorkoutSummary]) -> String {
        var out = "id,start,sport,elapsed_s,distance_m,energy_kcal,avg_hr,max_hr,ascent_m\n"
        func n(_ v: Double?) -> String { v.map { NumberText.plain($0) } ?? "" }
        func i(_ v: Int?) -> String { v.map(String.init) ?? "" }
        for w in list {
            let fields: [String] = [w.id, w.start, csvField(w.sport), n(w.elapsedS), n(w.distanceM), n(w.energyKcal), i(w.avgHR), i(w.maxHR), n(w.ascentM)]
            out += fields.joined(separator: ",") + "\n"
        }
        return out
    }

    /// One CSV field: quoted when it holds a comma, a quote or a line break; a leading `=`, `+`,
    /// `-` or `@` is prefixed with `'` so a spreadsheet does not run it as a formula.
    static func csvField(_ text: String) -> String {
        var text = text
        if let first = text.first, "=+-@".contains(first) { text = "'" + text }
        guard text.contains(where: { ",\"\n\r".contains($0) }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func urlQueryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    /// *workout*: its figures, each metric against one shared elapsed-time axis (a crosshair moves
    /// across all of them when scripts run), its route coloured by a metric, its heart-rate zones and laps.
    static func workout(_ figures: WorkoutFigures, boundary: DayBoundary) -> String {
        let w = figures.workout
        let id = w.id.description
        let foot = [.running, .walking, .hiking].contains(Sport.normalize(w.sport))
        var facts: [(String, String)] = [
            ("Start", localTime(w.start, boundary)), ("Time", TimeSeriesChart.clock(w.elapsedS)),
        ]
        if let timer = w.timerS, abs(timer - w.elapsedS) >= 1 { facts.append(("Moving time", TimeSeriesChart.clock(timer))) }
        if let d = w.distanceM, d > 0 {
            facts.append(("Distance", km(d)))
            let speed = d / (w.timerS ?? w.elapsedS)
            facts.append(("Average speed", NumberText.plain((speed * 36).rounded() / 10) + " km/h"))
            // Pace is how runners, walkers and hikers read their speed.
            if speed > 0, foot {
                facts.append(("Average pace", TimeSeriesChart.clock(1000 / speed) + " /km"))
            }
        }
        if let kcal = w.energyKcal {
            facts.append(("Energy", NumberText.plain(kcal.rounded()) + " kcal" + (w.energySource == .estimated ? " (estimated)" : "")))
        }
        if let hr = w.avgHeartRate { facts.append(("Heart rate", "\(hr) avg" + (w.maxHeartRate.map { ", \($0) max" } ?? ""))) }
        if let up = w.ascentM { facts.append(("Ascent", NumberText.plain(up.rounded()) + " m")) }
        facts.append(("Source", w.source.device.map { "\(w.source.driver) (\($0))" } ?? w.source.driver))
        let summary = "<dl class=\"facts\">" + facts.map { "<dt>\(HTML.escape($0.0))</dt><dd>\(HTML.escape($0.1))</dd>" }.joined() + "</dl>"

        let ticks = TimeSeriesChart.elapsedTicks(figures.duration)
        var charts = ""
        for s in figures.series {
            let chart = TimeSeriesChart(
                id: "chart-\(s.key)", title: "\(s.title) (\(s.unit))",
                description: "\(s.title) against elapsed time, \(s.samples) samples: lowest \(NumberText.plain(rounded(s.low))), "
                    + "mean \(NumberText.plain(rounded(s.mean))), highest \(NumberText.plain(rounded(s.high))) \(s.unit). Gaps are pauses or lost signal.",
                unit: s.unit, lines: [.init(style: "series", runs: s.runs)], xMax: figures.duration, xTicks: ticks)
            charts += """
                <figure data-series="\(s.key)" data-samples="\(s.samples)" data-low="\(NumberText.plain(s.low))" data-high="\(NumberText.plain(s.high))">
                \(chart.svg())
                <figcaption>\(HTML.escape(s.title)): lowest \(NumberText.plain(rounded(s.low))), mean \(NumberText.plain(rounded(s.mean))), \
                highest \(NumberText.plain(rounded(s.high))) \(HTML.escape(s.unit)) <output class="readout" aria-live="off"></output></figcaption>
                </figure>

                """
        }
        if charts.isEmpty { charts = "<p>This workout has no samples (a summary only).</p>" }

        var route = ""
        if let metric = figures.routeMetric, let info = WorkoutFigures.metrics.first(where: { $0.key == metric }) {
            let map = RouteMap(id: "route", title: "Route, coloured by \(info.title.lowercased())",
                               description: "The route drawn from \(figures.route.count) recorded positions, without a map: "
                                   + "darker is lower \(info.title.lowercased()), lighter is higher.", points: figures.route)
            let others = figures.series.map(\.key).filter { $0 != metric }.map { key in
                "<a href=\"/workout?id=\(id)&amp;colour=\(key)\">\(HTML.escape(WorkoutFigures.metrics.first { $0.key == key }!.title.lowercased()))</a>"
            }
            route = """
                <h2>Route</h2>
                <figure>
                \(map.svg())
                <figcaption>\(map.legend(unit: info.unit) { NumberText.plain(rounded($0)) })\
                \(others.isEmpty ? "" : "Colour by: " + others.joined(separator: " · "))</figcaption>
                </figure>
                """
        }

        var zones = ""
        if let z = figures.zones {
            let total = max(1, z.seconds.reduce(0, +))
            let names = ["below zone 1"] + (1...5).map { "zone \($0)" }
            var rows = ""
            for (i, seconds) in z.seconds.enumerated().reversed() {
                let low = i == 0 ? nil : Int((HeartRateZones.lower[i - 1] * Double(z.maxHeartRate)).rounded())
                let high = i == 0 ? Int((HeartRateZones.lower[0] * Double(z.maxHeartRate)).rounded())
                    : i < 5 ? Int((HeartRateZones.lower[i] * Double(z.maxHeartRate)).rounded()) : nil
                let bpm = low.map { l in high.map { "\(l)–\($0 - 1)" } ?? "\(l)+" } ?? "under \(high!)"
                let percent = Int((seconds / total * 100).rounded())
                rows += "<tr data-zone=\"\(i)\" data-seconds=\"\(NumberText.plain(seconds.rounded()))\"><td>\(names[i])</td><td class=\"num\">\(bpm)</td>"
                    + "<td class=\"num\">\(TimeSeriesChart.clock(seconds))</td><td class=\"num\">\(percent)%</td>"
                    + "<td class=\"barcell\" aria-hidden=\"true\"><span class=\"hbar zone\(i)\" style=\"width:\(percent)%\"></span></td></tr>\n"
            }
            zones = """
                <h2>Heart-rate zones</h2>
                <p class="muted">Zones are shares of \(z.maxHeartRate) bpm, \(HTML.escape(figures.zonesBasis ?? "")).</p>
                <div class="table"><table><caption>Time in each zone</caption>
                <thead><tr><th scope="col">Zone</th><th scope="col" class="num">bpm</th><th scope="col" class="num">Time</th>\
                <th scope="col" class="num">Share</th><th scope="col"><span class="visually-hidden">Bar</span></th></tr></thead>
                <tbody>
                \(rows)</tbody></table></div>
                """
        }

        var laps = ""
        if w.laps.count > 1 {
            var rows = ""
            for (i, lap) in w.laps.enumerated() {
                rows += "<tr><td class=\"num\">\(i + 1)</td><td class=\"num\">\(TimeSeriesChart.clock(lap.start.timeIntervalSince(w.start)))</td>"
                    + "<td class=\"num\">\(TimeSeriesChart.clock(lap.elapsedS))</td><td class=\"num\">\(km(lap.distanceM))</td>"
                    + "<td class=\"num\">\(lap.distanceM.flatMap { d in d > 0 ? pace(d, lap.timerS ?? lap.elapsedS, foot: foot) : nil } ?? "-")</td>"
                    + "<td class=\"num\">\(lap.avgHeartRate.map(String.init) ?? "-")</td><td class=\"num\">\(lap.maxHeartRate.map(String.init) ?? "-")</td></tr>\n"
            }
            laps = """
                <h2>Laps</h2>
                <div class="table"><table><caption>\(w.laps.count) laps</caption>
                <thead><tr><th scope="col" class="num">Lap</th><th scope="col" class="num">From</th><th scope="col" class="num">Time</th>\
                <th scope="col" class="num">Distance</th><th scope="col" class="num">\(foot ? "Pace /km" : "km/h")</th><th scope="col" class="num">Avg HR</th>\
                <th scope="col" class="num">Max HR</th></tr></thead>
                <tbody>
                \(rows)</tbody></table></div>
                """
        }
        let body = """
            <p><a href="/workouts">All workouts</a> · <a href="/workout.csv?id=\(id)" download>Samples as CSV</a></p>
            \(summary)
            <div class="charts">
            \(charts)</div>
            \(route)
            \(zones)
            \(laps)
            """
        return HTML.page(title: "\(w.sport.capitalized), \(localTime(w.start, boundary))", current: "/workouts", body: body,
                         scripts: figures.series.isEmpty ? [] : ["/static/crosshair.js"])
    }

    /// A lap's pace (`5:12`, per km) on foot, else its speed in km/h.
    static func pace(_ metres: Double, _ seconds: Double, foot: Bool) -> String {
        foot ? TimeSeriesChart.clock(seconds / metres * 1000) : NumberText.plain((metres / seconds * 36).rounded() / 10)
    }

    /// To one decimal: 142.3, 9.9.
    static func rounded(_ v: Double) -> Double { (v * 10).rounded() / 10 }

    /// A workout's samples as CSV, one row per sample, every metric a column.
    static func workoutCSV(_ w: Workout) -> String {
        var out = "time,elapsed_s,heart_rate,speed_mps,power_w,cadence,altitude_m,distance_m,latitude,longitude\n"
        for s in w.samples.sorted(by: { $0.time < $1.time }) {
            let fields: [String?] = [
                ISO8601.string(s.time), NumberText.plain(s.time.timeIntervalSince(w.start)), s.heartRate.map(String.init),
                s.speedMps.map { NumberText.plain($0) }, s.powerW.map { NumberText.plain($0) }, s.cadence.map { NumberText.plain($0) },
                s.altitudeM.map { NumberText.plain($0) }, s.distanceM.map { NumberText.plain($0) },
                s.latitude.map { String($0) }, s.longitude.map { String($0) },
            ]
            out += fields.map { $0 ?? "" }.joined(separator: ",") + "\n"
        }
        return out
    }
}
