import Foundation
import HealthModel
import HealthStore

/// One local day on one time axis: sleep and workouts as spans, drinks, vaping sessions, meals
/// and habit check-ins as marks, each in its own lane, so that what goes with what shows (a vape
/// after every meal, poor sleep after a late run). Spans that cross the day's bounds are cut at them.
struct Timeline {
    struct Span: Equatable {
        var start: Date
        var end: Date
        var style: String
        var title: String
    }

    struct Mark: Equatable {
        var time: Date
        var style: String
        var title: String
    }

    struct Lane: Equatable {
        var name: String
        var spans: [Span] = []
        var marks: [Mark] = []
    }

    var day: LocalDay
    var start: Date
    var end: Date
    var lanes: [Lane]
    /// The hour labels are local times of its zone.
    var boundary: DayBoundary

    /// The lanes of a day from its records (those overlapping `start..<end`).
    static func compute(day: LocalDay, start: Date, end: Date, nights: [SleepSession], workouts: [WorkoutSummary], events: [HabitEvent],
                        boundary: DayBoundary, units: Preferences) -> Timeline {
        func clip(_ a: Date, _ b: Date) -> (Date, Date)? {
            let s = max(a, start), e = min(b, end)
            return s < e ? (s, e) : nil
        }
        func at(_ d: Date) -> String { Pages.clock(d, boundary) }
        var sleep = Lane(name: "Sleep")
        for n in nights {
            let stages = n.stages.isEmpty ? [SleepStageSpan(start: n.start, end: n.end, stage: .unknown)] : n.stages
            for st in stages {
                guard let (s, e) = clip(st.start, st.end) else { continue }
                sleep.spans.append(Span(start: s, end: e, style: "stage-\(st.stage.rawValue)",
                                        title: "\(st.stage.rawValue) \(at(st.start))–\(at(st.end))"))
            }
        }
        var active = Lane(name: "Workouts")
        for w in workouts {
            guard let ws = ISO8601.parse(w.start), let we = ISO8601.parse(w.end), let (s, e) = clip(ws, we) else { continue }
            active.spans.append(Span(start: s, end: e, style: "span-workout", title: "\(w.sport) \(at(ws))–\(at(we))"))
        }
        var water = Lane(name: "Water"), vaping = Lane(name: "Vaping"), meals = Lane(name: "Meals"), habits = Lane(name: "Habits")
        for e in events where e.time >= start && e.time < end && e.isCheckIn {
            let title = "\(DayEntry.what(.habit(e))) \(at(e.time))"
                + (e.value.map { " " + Quantities.text($0, unit: e.unit, preferences: units) } ?? "")
            switch Definition.key(e.habit) {
            case BuiltInHabit.hydration: water.marks.append(Mark(time: e.time, style: "mark-water", title: title))
            case BuiltInHabit.vaping: vaping.marks.append(Mark(time: e.time, style: "mark-vaping", title: title))
            case BuiltInHabit.meal: meals.marks.append(Mark(time: e.time, style: "mark-meal", title: title))
            default: habits.marks.append(Mark(time: e.time, style: "mark-habit", title: title))
            }
        }
        return Timeline(day: day, start: start, end: end, lanes: [sleep, active, water, vaping, meals, habits], boundary: boundary)
    }

    func svg(width: Int = 640) -> String {
        let left = 80.0, right = 12.0, laneHeight = 30.0, top = 8.0
        let plotW = Double(width) - left - right
        let height = top + laneHeight * Double(lanes.count) + 24
        let span = end.timeIntervalSince(start)
        func x(_ d: Date) -> Double { left + plotW * d.timeIntervalSince(start) / span }
        let id = "timeline-\(day)"
        let counts = lanes.map { "\($0.name.lowercased()) \($0.spans.count + $0.marks.count)" }.joined(separator: ", ")
        var out = SVGChart.open(id: id, width: width, height: height, title: "\(day) on one time axis",
                                description: "From the day's start to the next day's, one lane each: \(counts).", attributes: "class=\"timeline\"")
        // Hour lines every three hours from the day's start.
        var tick = start
        while tick <= end {
            let tx = DailyBars.f(x(tick))
            out += "<line class=\"grid\" x1=\"\(tx)\" y1=\"\(DailyBars.f(top))\" x2=\"\(tx)\" y2=\"\(DailyBars.f(height - 20))\"/>"
                + "<text class=\"x-label\" x=\"\(tx)\" y=\"\(DailyBars.f(height - 4))\" "
                + "text-anchor=\"\(tick.addingTimeInterval(3 * 3600) > end ? "end" : "middle")\">\(Pages.clock(tick, boundary))</text>\n"
            tick = tick.addingTimeInterval(3 * 3600)
        }
        for (i, lane) in lanes.enumerated() {
            let y = top + Double(i) * laneHeight
            out += "<g class=\"lane\" data-lane=\"\(lane.name.lowercased())\" data-count=\"\(lane.spans.count + lane.marks.count)\">"
                + "<text x=\"4\" y=\"\(DailyBars.f(y + laneHeight / 2))\" dominant-baseline=\"middle\">\(HTML.escape(lane.name))</text>"
            for s in lane.spans {
                out += "<rect class=\"\(s.style)\" x=\"\(DailyBars.f(x(s.start)))\" y=\"\(DailyBars.f(y + 5))\" "
                    + "width=\"\(DailyBars.f(max(1, x(s.end) - x(s.start))))\" height=\"\(DailyBars.f(laneHeight - 10))\">"
                    + "<title>\(HTML.escape(s.title))</title></rect>"
            }
            for m in lane.marks {
                out += "<rect class=\"\(m.style)\" x=\"\(DailyBars.f(x(m.time) - 1.5))\" y=\"\(DailyBars.f(y + 4))\" width=\"3\" "
                    + "height=\"\(DailyBars.f(laneHeight - 8))\"><title>\(HTML.escape(m.title))</title></rect>"
            }
            out += "</g>\n"
        }
        return out + "</svg>"
    }

}

extension Pages {
    /// *timeline*: a day (or the seven up to it) on one time axis each.
    static func timeline(_ days: [Timeline], last: LocalDay, today: LocalDay, count: Int) -> String {
        let next = last < today ? " · <a href=\"/timeline?day=\(last.adding(count))&amp;days=\(count)\">later →</a>" : ""
        let other = count == 1 ? "<a href=\"/timeline?day=\(last)&amp;days=7\">7 days</a>" : "<a href=\"/timeline?day=\(last)&amp;days=1\">1 day</a>"
        let legend = "<ul class=\"legend\">" + [("stage-deep", "deep sleep"), ("stage-light", "light sleep"), ("stage-rem", "REM"),
                                                 ("stage-awake", "awake"), ("stage-unknown", "asleep"), ("span-workout", "workout"),
                                                 ("mark-water", "drink"), ("mark-vaping", "vape"), ("mark-meal", "meal"), ("mark-habit", "check-in")]
            .map { "<li><span class=\"key \($0.0)\"></span> \($0.1)</li>" }.joined() + "</ul>"
        let figures = days.reversed().map { t in
            "<figure data-day=\"\(t.day)\">\n\(t.svg())\n<figcaption>\(t.day)</figcaption>\n</figure>"
        }.joined(separator: "\n")
        let body = """
            <p><a href="/timeline?day=\(last.adding(-count))&amp;days=\(count)">← earlier</a>\(next) · \(other)</p>
            \(legend)
            \(figures)
            <p class="muted">Hover a mark for what and when; <a href="/entries?day=\(last)">the day's entries</a> as a table.</p>
            """
        return HTML.page(title: count == 1 ? "Timeline of \(last)" : "Timeline, \(last.adding(1 - count)) to \(last)", current: "/timeline", body: body)
    }
}
