import Foundation
import HealthModel
import HealthReports

/// One night of sleep as the sleep page counts it. A night belongs to the day it ends
/// (``DayBoundary/day(ofNightEnding:)``). Where two devices recorded the same hours, the session
/// with the most sleep counts and the one overlapping it does not; sessions that overlap nothing
/// kept (a nap) are added.
struct SleepNight: Equatable {
    var day: String
    /// Seconds in each stage, in ``SleepNight/stages`` order; a session without stages counts
    /// as `unknown` (asleep, stage not known).
    var stageSeconds: [Double]
    /// The main (longest) session's start and end.
    var bed: Date
    var wake: Date
    var sessions: Int
    /// The drivers (and devices) of the kept sessions.
    var sources: [String]

    /// Drawn bottom first.
    static let stages: [SleepStage] = [.deep, .light, .rem, .unknown, .awake]

    var asleepS: Double { zip(Self.stages, stageSeconds).filter { $0.0 != .awake }.reduce(0) { $0 + $1.1 } }

    /// The kept sessions of a day's candidates (``SleepSession/countedOnce(_:)``, the rule derived habits use too).
    static func kept(_ sessions: [SleepSession]) -> [SleepSession] { SleepSession.countedOnce(sessions) }

    /// The nights of `days` (oldest first) from the sessions ending in them; nil where none.
    static func nights(_ sessions: [SleepSession], days: [LocalDay], boundary: DayBoundary) -> [SleepNight?] {
        var byDay: [String: [SleepSession]] = [:]
        for s in sessions { byDay[boundary.day(ofNightEnding: s.end).description, default: []].append(s) }
        return days.map { day in
            let kept = kept(byDay[day.description] ?? [])
            guard let main = kept.first else { return nil }
            var seconds = [Double](repeating: 0, count: stages.count)
            for s in kept {
                if s.stages.isEmpty {
                    seconds[stages.firstIndex(of: .unknown)!] += s.end.timeIntervalSince(s.start)
                }
                for span in s.stages { seconds[stages.firstIndex(of: span.stage)!] += span.end.timeIntervalSince(span.start) }
            }
            let sources = Set(kept.map { s in s.source.device.map { "\(s.source.driver) (\($0))" } ?? s.source.driver }).sorted()
            return SleepNight(day: day.description, stageSeconds: seconds, bed: main.start, wake: main.end, sessions: kept.count, sources: sources)
        }
    }
}

extension Pages {
    /// *sleep*: one bar per night with its stages, bed and wake times, for the last 30 or 90 nights.
    static func sleep(_ nights: [SleepNight?], days: [LocalDay], range: Int, boundary: DayBoundary) -> String {
        var chart = DailyBars(id: "sleep", title: "Sleep per night, last \(range) nights",
                              description: "Hours in each sleep stage per night (a night counts on the day it ends). "
                                  + "\(nights.compactMap { $0 }.count) of \(range) nights have data; nights without any are drawn hatched.",
                              unit: "h", days: zip(days, nights).map { day, night in
                                  DailyBars.Day(label: day.description, value: night.map { hours($0.stageSeconds.reduce(0, +)) },
                                                parts: night.map { $0.stageSeconds.map(hours) })
                              }, goal: nil)
        chart.parts = SleepNight.stages.map { ($0.rawValue, "stage-\($0.rawValue)") }
        let legend = "<ul class=\"legend\">" + SleepNight.stages.map {
            "<li><span class=\"key stage-\($0.rawValue)\"></span> \($0 == .unknown ? "asleep, stage not known" : $0.rawValue)</li>"
        }.joined() + "</ul>"
        let times = NightTimes(id: "sleep-times", nights: zip(days, nights).map { ($0.description, $1) }, boundary: boundary)
        var rows = ""
        for (day, night) in zip(days, nights).reversed() {
            guard let n = night else {
                rows += "<tr data-day=\"\(day)\"><td>\(day)</td><td colspan=\"\(4 + SleepNight.stages.count)\">no data</td></tr>\n"
                continue
            }
            rows += "<tr data-day=\"\(day)\" data-asleep-s=\"\(NumberText.plain(n.asleepS))\"><td>\(day)</td>"
                + "<td class=\"num\">\(clock(n.bed, boundary))</td><td class=\"num\">\(clock(n.wake, boundary))</td>"
                + "<td class=\"num\">\(HTML.escape(Durations.short(n.asleepS)))</td>"
                + n.stageSeconds.map { "<td class=\"num\">\(NumberText.plain(($0 / 60).rounded()))</td>" }.joined()
                + "<td>\(HTML.escape(n.sources.joined(separator: ", ")))</td></tr>\n"
        }
        let kept = nights.compactMap { $0 }
        let average = kept.isEmpty ? "" : "<p data-field=\"average-asleep-s\" data-value=\"\(NumberText.plain((kept.map(\.asleepS).reduce(0, +) / Double(kept.count)).rounded()))\">"
            + "On average \(HTML.escape(Durations.short(kept.map(\.asleepS).reduce(0, +) / Double(kept.count)))) asleep over \(count(kept.count, "night")).</p>"
        let body = """
            <p>\([30, 90].map { $0 == range ? "<strong>\($0) nights</strong>" : "<a href=\"/sleep?nights=\($0)\">\($0) nights</a>" }.joined(separator: " · "))</p>
            \(average)
            <figure>
            \(chart.svg())
            <figcaption>\(legend)Source: every sleep session recorded or imported; where two devices recorded the same night, \
            the one with more sleep counts. <a href="/sleep.csv?nights=\(range)" download>Download as CSV</a></figcaption>
            </figure>
            <figure>
            \(times.svg())
            </figure>
            <details><summary>The data as a table</summary>
            <div class="table"><table><caption>Sleep per night (stages in minutes)</caption>
            <thead><tr><th scope="col">Night to</th><th scope="col" class="num">Bed</th><th scope="col" class="num">Wake</th>\
            <th scope="col" class="num">Asleep</th>\(SleepNight.stages.map { "<th scope=\"col\" class=\"num\">\($0.rawValue)</th>" }.joined())\
            <th scope="col">Source</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            </details>
            """
        return HTML.page(title: "Sleep", current: "/sleep", body: body)
    }

    static func hours(_ seconds: Double) -> Double { (seconds / 360).rounded() / 10 }

    /// Local `HH:MM`.
    static func clock(_ date: Date, _ boundary: DayBoundary) -> String {
        let c = boundary.calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", c.hour ?? 0, c.minute ?? 0)
    }

    /// The sleep page's nights as CSV: `night,bed,wake,asleep_s,` then seconds per stage, `sources`.
    static func sleepCSV(_ nights: [SleepNight?], days: [LocalDay]) -> String {
        var out = "night,bed,wake,asleep_s," + SleepNight.stages.map { "\($0.rawValue)_s" }.joined(separator: ",") + ",sources\n"
        for (day, night) in zip(days, nights) {
            guard let n = night else {
                out += "\(day)" + String(repeating: ",", count: 4 + SleepNight.stages.count) + "\n"
                continue
            }
            out += "\(day),\(ISO8601.string(n.bed)),\(ISO8601.string(n.wake)),\(NumberText.plain(n.asleepS)),"
                + n.stageSeconds.map { NumberText.plain($0) }.joined(separator: ",") + "," + csvField(n.sources.joined(separator: "; ")) + "\n"
        }
        return out
    }
}

/// Bed and wake times, one bar per night from going to bed (top) to waking (bottom), on a clock
/// axis from 18:00 the evening before to 14:00 the day the night ends.
struct NightTimes {
    var id: String
    var nights: [(day: String, night: SleepNight?)]
    var boundary: DayBoundary
    var width = 640, height = 260

    static let first = 18.0, span = 20.0

    func svg() -> String {
        let left = 56.0, right = 12.0, top = 24.0, bottom = 30.0
        let plotW = Double(width) - left - right, plotH = Double(height) - top - bottom
        let slot = nights.isEmpty ? plotW : plotW / Double(nights.count)
        func y(_ hours: Double) -> Double { top + plotH * min(max(hours, 0), Self.span) / Self.span }
        var out = SVGChart.open(id: id, width: width, height: Double(height), title: "Bed and wake times",
                                description: "For each night, a bar from the time the main sleep started to the time it ended, "
                                    + "on a clock from 18:00 the evening before to 14:00.")
        for h in stride(from: 0.0, through: Self.span, by: 4) {
            let ty = DailyBars.f(y(h))
            out += "<line class=\"grid\" x1=\"\(DailyBars.f(left))\" y1=\"\(ty)\" x2=\"\(DailyBars.f(Double(width) - right))\" y2=\"\(ty)\"/>"
                + "<text class=\"y-label\" x=\"\(DailyBars.f(left - 6))\" y=\"\(ty)\" text-anchor=\"end\" dominant-baseline=\"middle\">"
                + String(format: "%02d:00", Int(Self.first + h) % 24) + "</text>\n"
        }
        let labelEvery = max(1, Int((Double(nights.count) / 8).rounded(.up)))
        for (i, entry) in nights.enumerated() {
            let x = left + Double(i) * slot
            if let n = entry.night, let day = LocalDay(entry.day) {
                // Hours since 18:00 local the evening before the night's day.
                let before = day.adding(-1)
                let evening = boundary.calendar.date(from: DateComponents(year: before.year, month: before.month, day: before.day, hour: 18))!
                let from = n.bed.timeIntervalSince(evening) / 3600, to = n.wake.timeIntervalSince(evening) / 3600
                out += "<rect class=\"bar\" data-day=\"\(entry.day)\" x=\"\(DailyBars.f(x + slot * 0.15))\" y=\"\(DailyBars.f(y(from)))\" "
                    + "width=\"\(DailyBars.f(max(1, slot * 0.7)))\" height=\"\(DailyBars.f(max(1, y(to) - y(from))))\">"
                    + "<title>\(entry.day): \(Pages.clock(n.bed, boundary)) to \(Pages.clock(n.wake, boundary))</title></rect>\n"
            }
            if i % labelEvery == 0 {
                out += "<text class=\"x-label\" x=\"\(DailyBars.f(x + slot / 2))\" y=\"\(DailyBars.f(Double(height) - 8))\" "
                    + "text-anchor=\"middle\">\(entry.day.suffix(5))</text>\n"
            }
        }
        return out + "</svg>"
    }
}
