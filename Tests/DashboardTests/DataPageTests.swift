import Foundation
import FoundationXML
import HealthModel
import HealthReports
import Testing
@testable import Dashboard

/// The figures behind the workout, sleep, body and stats pages, and the charts they draw:
/// runs broken at gaps, zones, the sleep rule for two devices, the weight trend, the route.
@Suite struct DataPageTests {
    typealias C = ChartTests
    static let t0 = Date(timeIntervalSince1970: 1_775_000_000)
    static let source = Source(driver: "test")

    @Test func seriesBreakAtGapsAndNeverJoinAcrossThem() throws {
        let points = [0.0, 1, 2, 3, 60, 61, 62, 200].map { ChartPoint(x: $0, y: $0) }
        let runs = TimeSeriesChart.runs(points, gap: 15)
        #expect(runs.map { $0.map(\.x) } == [[0, 1, 2, 3], [60, 61, 62], [200]])
        // Six times the median step, at least 15 s.
        #expect(TimeSeriesChart.gap(of: [0, 1, 2, 3, 4]) == 15)
        #expect(TimeSeriesChart.gap(of: [0, 5, 10, 15, 20]) == 30)
        let chart = TimeSeriesChart(id: "hr", title: "Heart rate", description: "bpm", unit: "bpm",
                                    lines: [.init(style: "series", runs: runs)], xMax: 200,
                                    xTicks: TimeSeriesChart.elapsedTicks(200))
        let svg = try C.parse(chart.svg())
        let lines = C.elements(svg, "polyline")
        #expect(lines.map { C.attr($0, "data-points") } == ["4", "3"])
        // The lone point of the last run is a dot, not joined to the one before.
        #expect(C.elements(svg, "circle").count == 1)
        #expect(C.attr(svg, "data-x-max") == "200" && C.attr(svg, "class") == "series-chart")
        // The y axis covers the values with round steps.
        let y = C.elements(svg, "text").filter { C.attr($0, "class") == "y-label" }.compactMap { Double($0.stringValue ?? "") }
        #expect(y.first! <= 0 && y.last! >= 200 && y == y.sorted())
        #expect(TimeSeriesChart.elapsedTicks(3600).map(\.label) == ["0:00", "10:00", "20:00", "30:00", "40:00", "50:00", "1:00:00"])
        #expect(TimeSeriesChart.clock(5400) == "1:30:00" && TimeSeriesChart.clock(65) == "1:05")
    }

    @Test func heartRateZonesCountTimeUntilTheNextSampleAndNotPauses() {
        #expect(HeartRateZones.zone(99, max: 200) == 0 && HeartRateZones.zone(100, max: 200) == 1)
        #expect(HeartRateZones.zone(179, max: 200) == 4 && HeartRateZones.zone(180, max: 200) == 5 && HeartRateZones.zone(230, max: 200) == 5)
        let hr = [(0, 100), (10, 150), (20, 185), (30, 185), (300, 120), (301, 121)]
        let samples = hr.map { Sample(time: Self.t0.addingTimeInterval(Double($0.0)), heartRate: $0.1) }
        let zones = HeartRateZones.compute(samples + [Sample(time: Self.t0.addingTimeInterval(5), speedMps: 3)], maxHeartRate: 200, gap: 15)
        // 0-10 zone 1 (100), 10-20 zone 3 (150), 20-30 zone 5 (185); 30-300 is a pause; 300-301 zone 2.
        #expect(zones.seconds == [0, 10, 1, 10, 0, 10])
    }

    @Test func aWorkoutsFiguresKeepEveryMetricOnOneAxis() {
        var samples: [Sample] = []
        for i in 0..<3600 {
            samples.append(Sample(time: Self.t0.addingTimeInterval(Double(i)), heartRate: 100 + i % 80, speedMps: i < 1800 ? 3 : nil,
                                  latitude: 52 + Double(i) * 1e-5, longitude: 13 + Double(i) * 1e-5))
        }
        let workout = Workout(id: RecordID.derive("w"), sport: "running", start: Self.t0, end: Self.t0.addingTimeInterval(3600),
                              samples: samples, source: Self.source)
        let figures = WorkoutFigures.compute(workout, maxHeartRate: (190, "test"), colour: "heart_rate", columns: 500)
        #expect(figures.series.map(\.key) == ["heart_rate", "speed"])
        let hr = figures.series[0]
        #expect(hr.samples == 3600 && hr.low == 100 && hr.high == 179)
        // Reduced to at most two points per pixel column, peaks kept.
        #expect(hr.runs.joined().count <= 1000 && hr.runs.joined().map(\.y).max() == 179 && hr.runs.joined().map(\.y).min() == 100)
        #expect(figures.series[1].runs.joined().map(\.x).max()! < 1800)
        #expect(figures.route.count == 3600 && figures.routeMetric == "heart_rate")
        #expect(figures.zones?.seconds.reduce(0, +) == 3599)
        // An unknown colour falls back to speed.
        #expect(WorkoutFigures.compute(workout, maxHeartRate: nil, colour: "<script>").routeMetric == "speed")
        #expect(WorkoutFigures.compute(workout, maxHeartRate: nil).zones == nil)
    }

    @Test func theRouteIsColouredInSixStepsWithoutAMap() throws {
        let points = (0..<100).map { RouteMap.Point(latitude: 48 + Double($0) * 1e-4, longitude: 11, value: Double($0)) }
        let map = RouteMap(id: "route", title: "Route", description: "by speed", points: points)
        let svg = try C.parse(map.svg())
        let steps = Set(C.elements(svg, "polyline").compactMap { C.attr($0, "data-step") })
        #expect(steps == ["0", "1", "2", "3", "4", "5"])
        // Nothing from outside: no image, no link, no foreign object.
        #expect(!map.svg().contains("href") && !map.svg().contains("<image"))
        #expect(map.legend(unit: "km/h") { String(Int($0)) }.components(separatedBy: "<li>").count == 7)
        // A point without the metric is grey.
        var some = points
        some[50].value = nil
        some[51].value = nil
        #expect(RouteMap(id: "r", title: "", description: "", points: some).svg().contains("data-step=\"none\""))
    }

    static func session(_ id: String, _ start: Double, _ end: Double, stages: [(Double, Double, SleepStage)] = [], driver: String = "a") -> SleepSession {
        SleepSession(id: RecordID.derive(id), start: t0.addingTimeInterval(start * 3600), end: t0.addingTimeInterval(end * 3600),
                     stages: stages.map { SleepStageSpan(start: t0.addingTimeInterval($0.0 * 3600), end: t0.addingTimeInterval($0.1 * 3600), stage: $0.2) },
                     source: Source(driver: driver))
    }

    @Test func aNightRecordedByTwoDevicesCountsOnce() {
        let watch = Self.session("watch", 0, 8, stages: [(0, 1, .awake), (1, 3, .deep), (3, 8, .light)], driver: "watch")
        let ring = Self.session("ring", 0.5, 7.5, driver: "ring")
        let nap = Self.session("nap", 12, 12.5, driver: "ring")
        let kept = SleepNight.kept([ring, nap, watch])
        // The watch's night and the ring's hold as much sleep (7 h): the earlier start, the watch's, counts.
        #expect(kept.map(\.id) == [watch.id, nap.id])
        let zone = TimeZone(identifier: "UTC")!
        let boundary = DayBoundary(timeZone: zone)
        let day = boundary.day(of: watch.end)
        let nights = SleepNight.nights([ring, nap, watch], days: [day.adding(-1), day], boundary: boundary)
        #expect(nights[0] == nil)
        let night = try! #require(nights[1])
        // deep, light, rem, unknown (the nap has no stages), awake.
        #expect(night.stageSeconds == [7200, 18000, 0, 1800, 3600])
        #expect(night.asleepS == 27000 && night.sessions == 2 && night.sources == ["ring", "watch"])
        #expect(night.bed == watch.start && night.wake == watch.end)
    }

    @Test func stackedBarsAddUpToTheNight() throws {
        var chart = DailyBars(id: "sleep", title: "Sleep", description: "per night", unit: "h",
                              days: [.init(label: "2026-04-01", value: 7.5, parts: [2, 5, 0.5]), .init(label: "2026-04-02", value: nil)], goal: nil)
        chart.parts = [("deep", "stage-deep"), ("light", "stage-light"), ("rem", "stage-rem")]
        let svg = try C.parse(chart.svg())
        let stack = try #require(C.elements(svg, "g").first { C.attr($0, "class") == "stack" })
        #expect(C.attr(stack, "data-value") == "7.5")
        let parts = C.elements(stack, "rect")
        #expect(parts.map { C.attr($0, "data-part") } == ["deep", "light", "rem"])
        let heights = parts.map { Double(C.attr($0, "height")!)! }
        #expect(abs(heights[1] / heights[0] - 2.5) < 0.02)
        // Stacked: each part starts where the one below ends.
        #expect(abs(Double(C.attr(parts[0], "y")!)! - (Double(C.attr(parts[1], "y")!)! + heights[1])) < 0.2)
        #expect(C.elements(svg, "rect").contains { C.attr($0, "class") == "gap" && C.attr($0, "data-day") == "2026-04-02" })
    }

    @Test func theWeightTrendMovesATenthOfTheWayEachDay() {
        let readings = [80.0, 79, 81, 78].enumerated().map { i, kg in
            HealthModel.Measurement(id: RecordID.derive("w\(i)"), kind: .weight, time: Self.t0.addingTimeInterval(Double(i) * 86400 * (i == 3 ? 3 : 1)),
                                    value: kg, source: Self.source)
        }
        let series = BodySeries.compute(.weight, readings.reversed())
        #expect(series.points.map(\.value) == [80, 79, 81, 78])
        let t1 = 80 + 0.1 * (79 - 80.0), t2 = t1 + 0.1 * (81 - t1)
        // The fourth comes 7 days after the third: 1 - 0.9^7 of the way.
        let t3 = t2 + (1 - pow(0.9, 7)) * (78 - t2)
        #expect(zip(series.points.map(\.trend), [80, t1, t2, t3]).allSatisfy { abs($0 - $1) < 1e-9 })
        #expect(series.weeklyChange! < 0)
        #expect(BodySeries.compute(.weight, Array(readings.prefix(1))).weeklyChange == nil)
        // In pounds: values and trend scale.
        #expect(BodySeries.compute(.weight, Array(readings.prefix(1)), scale: 2).points.first?.trend == 160)
    }

    /// A steady fall of 0.1 kg a day: the trend reaches a lower goal on the projected day, is
    /// off course for a higher one, and there for the goal it stands at.
    @Test func theTrendIsProjectedToTheGoal() throws {
        let readings = (0..<60).map { i in
            HealthModel.Measurement(id: RecordID.derive("f\(i)"), kind: .weight, time: Self.t0.addingTimeInterval(Double(i) * 86400),
                                    value: 80 - 0.1 * Double(i), source: Self.source)
        }
        let series = BodySeries.compute(.weight, readings)
        let last = try #require(series.points.last), weekly = try #require(series.weeklyChange)
        // The trend lags a steady fall by 0.9 days' worth, and falls 0.7 kg a week once settled.
        #expect(abs(weekly + 0.7) < 0.02, "\(weekly)")
        guard case .reaches(let date) = series.outlook(goal: 70) else { Issue.record("\(series.outlook(goal: 70))"); return }
        #expect(abs(date.timeIntervalSince(last.time) / 86400 - (70 - last.trend) / weekly * 7) < 1e-6)
        #expect(series.outlook(goal: 85) == .notOnCourse)
        #expect(series.outlook(goal: last.trend + 0.05) == .reached)
        // 80 kg away at 0.7 kg a week is more than two years.
        #expect(series.outlook(goal: last.trend - 80) == .notOnCourse)
        #expect(BodySeries.compute(.weight, Array(readings.prefix(1))).outlook(goal: 70) == .unknown)
        #expect(BodySeries(kind: .weight, points: []).outlook(goal: 70) == .unknown)
    }

    @Test func theStatsPageShowsTheLastPeriodsUpToToday() {
        let today = LocalDay("2026-04-02")!
        let weeks = Pages.statsPeriods(.week, today: today, firstRecord: nil)
        #expect(weeks.count == 26 && weeks.last == LocalDay("2026-03-30") && weeks.allSatisfy { $0.isoWeekday == 1 })
        let years = Pages.statsPeriods(.year, today: today, firstRecord: LocalDay("2023-06-01"))
        #expect(years.map(\.description) == ["2023-01-01", "2024-01-01", "2025-01-01", "2026-01-01"])
        let months = Pages.statsPeriods(.month, today: today, firstRecord: nil)
        #expect(months.count == 24 && months.first == LocalDay("2024-05-01"))
    }

    @Test func csvFieldsAreQuotedAndNeverFormulas() {
        #expect(Pages.csvField("running") == "running")
        #expect(Pages.csvField("a,b") == "\"a,b\"" && Pages.csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(Pages.csvField("=HYPERLINK(1)") == "'=HYPERLINK(1)" && Pages.csvField("@x") == "'@x")
    }

    @Test func theBoxCardSaysWhatTheDaemonKnows() {
        let boundary = DayBoundary(timeZone: TimeZone(identifier: "UTC")!)
        let status = DashboardStatus(drivers: [.init(name: "strap", type: "ble", state: "running", devices: ["C0:FF:EE:00:00:01"], detail: nil),
                                               .init(name: "watch", type: "usb", state: "waiting", devices: [], detail: "<b>no watch</b>")],
                                     lastSyncAt: "2026-04-02T10:15:00Z", lastSyncError: nil, server: "https://example.org")
        let card = Pages.systemCard(status, outbox: 3, refused: 1, boundary: boundary)
        #expect(card.contains("data-field=\"outbox\" data-value=\"3\"") && card.contains("data-field=\"refused\" data-value=\"1\""))
        #expect(card.contains("data-field=\"devices-connected\" data-value=\"1\"") && card.contains("C0:FF:EE:00:00:01"))
        #expect(card.contains("Last sync <time datetime=\"2026-04-02T10:15:00Z\">2026-04-02 10:15</time>"))
        #expect(card.contains("&lt;b&gt;no watch&lt;/b&gt;") && !card.contains("<b>no watch"))
        var failing = status
        failing.lastSyncError = "server said <script>"
        #expect(Pages.systemCard(failing, outbox: 0, refused: 0, boundary: boundary).contains("Sync failing: server said &lt;script&gt;"))
        #expect(Pages.systemCard(nil, outbox: 0, refused: 0, boundary: boundary).contains("served from the database alone"))
    }

    @Test func theLoginSendsBackOnlyToThisDashboardAndLimitsGuessing() {
        #expect(DashboardServer.safeReturn("/water?days=7") == "/water?days=7")
        for hostile in ["//evil.example/", "https://evil.example/", "/\\evil.example", "/login?next=/", "water", "/x\ny", ""] {
            #expect(DashboardServer.safeReturn(hostile) == "/", "\(hostile)")
        }
        let limit = LoginLimit(), t = Self.t0
        for i in 0..<LoginLimit.attempts {
            #expect(limit.wait("10.0.0.2", now: t) == nil, "\(i)")
            limit.failed("10.0.0.2", now: t.addingTimeInterval(Double(i)))
        }
        #expect(limit.wait("10.0.0.2", now: t.addingTimeInterval(10)) == 50 && limit.wait("10.0.0.3", now: t) == nil)
        #expect(limit.wait("10.0.0.2", now: t.addingTimeInterval(60)) == nil)
        let sessions = Sessions()
        let token = sessions.start(now: t)
        #expect(sessions.isValid(token, now: t.addingTimeInterval(Sessions.lifetime - 1)))
        #expect(!sessions.isValid(token, now: t.addingTimeInterval(Sessions.lifetime)) && !sessions.isValid(nil, now: t))
        #expect(!sessions.isValid(token + "x", now: t))
        sessions.end(token)
        #expect(!sessions.isValid(token, now: t))
    }
}
