import Foundation
import HealthModel
import HealthStore

/// One record of a day as the entries page lists it, with what its edit form offers.
struct DayEntry {
    enum Kind { case habit, weight, workout, sleep }

    var id: String
    var version: Int
    var kind: Kind
    var time: Date
    /// `water`, `vaping (stress)`, `reading`, `meal: pasta`, `weight`, `running`, `sleep`.
    var what: String
    /// The value in the user's units, as text.
    var value: String
    var note: String?
    var source: String

    /// What a record is, in a word or two: `water`, `vaping (stress)`, `meal: pasta`, `running`.
    static func what(_ record: HealthRecord) -> String {
        switch record {
        case .habit(let e):
            switch Definition.key(e.habit) {
            case BuiltInHabit.hydration: return "water"
            case BuiltInHabit.vaping: return "vaping" + (e.category.map { " (\($0))" } ?? "")
            case BuiltInHabit.meal: return "meal" + (e.label.map { ": \($0)" } ?? "")
            default: return e.habit + (e.category.map { " (\($0))" } ?? "")
            }
        case .measurement(let m): return m.kind.rawValue.replacingOccurrences(of: "_", with: " ")
        case .workout(let w): return w.sport
        case .sleep: return "sleep"
        case .definition(let d): return d.name
        }
    }

    static func entries(habits: [HabitEvent], weights: [HealthModel.Measurement], workouts: [WorkoutSummary], nights: [SleepSession],
                        units: Preferences) -> [DayEntry] {
        var out: [DayEntry] = []
        func source(_ s: Source) -> String { s.device.map { "\(s.driver) (\($0))" } ?? s.driver }
        for e in habits {
            var value = !e.isCheckIn ? (e.label ?? "").replacingOccurrences(of: "_", with: " ")
                : e.value.map { Quantities.text($0, unit: e.unit, preferences: units) } ?? "done"
            if Definition.key(e.habit) == BuiltInHabit.vaping { value = e.label == "pod_finished" ? "pod finished" : "" }
            out.append(DayEntry(id: e.id.description, version: e.version, kind: .habit, time: e.time, what: what(.habit(e)), value: value,
                                note: e.note, source: source(e.source)))
        }
        for m in weights {
            out.append(DayEntry(id: m.id.description, version: m.version, kind: .weight, time: m.time, what: what(.measurement(m)),
                                value: Quantities.text(kilograms: m.value, in: units.mass), note: nil, source: source(m.source)))
        }
        for w in workouts {
            guard let start = ISO8601.parse(w.start) else { continue }
            let value = TimeSeriesChart.clock(w.elapsedS) + (w.distanceM.map { ", " + Pages.km($0) } ?? "")
                + (w.energyKcal.map { ", \(NumberText.plain($0.rounded())) kcal" } ?? "")
            out.append(DayEntry(id: w.id, version: w.version, kind: .workout, time: start, what: w.sport, value: value, note: nil,
                                source: source(w.source)))
        }
        for n in nights {
            out.append(DayEntry(id: n.id.description, version: n.version, kind: .sleep, time: n.start, what: "sleep",
                                value: Durations.short(n.end.timeIntervalSince(n.start)) + " in bed", note: nil, source: source(n.source)))
        }
        return out.sorted { ($0.time, $0.id) < ($1.time, $1.id) }
    }
}

extension Pages {
    /// *entries*: everything recorded on one day, each with a form to change it and one to
    /// delete it (a new version, a tombstone: both sync as `healthgate edit` and `delete` do).
    /// `token` nil: read-only, no forms.
    static func entries(_ entries: [DayEntry], day: LocalDay, today: LocalDay, token: String?, boundary: DayBoundary,
                        notice: String? = nil, problem: String? = nil) -> String {
        let hidden = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(token ?? ""))\"><input type=\"hidden\" name=\"day\" value=\"\(day)\">"
        var rows = ""
        for (i, e) in entries.enumerated() {
            let ids = "<input type=\"hidden\" name=\"id\" value=\"\(e.id)\"><input type=\"hidden\" name=\"version\" value=\"\(e.version)\">"
            func input(_ name: String, _ label: String, _ value: String = "", placeholder: String = "") -> String {
                "<label for=\"e\(i)-\(name)\">\(label)</label><input id=\"e\(i)-\(name)\" name=\"\(name)\" value=\"\(HTML.escape(value))\" "
                    + "placeholder=\"\(HTML.escape(placeholder))\" maxlength=\"2000\">"
            }
            let fields: String
            switch e.kind {
            case .habit: fields = input("value", "Value", placeholder: e.value) + input("note", "Note", e.note ?? "")
            case .weight: fields = input("value", "Weight", placeholder: e.value)
            case .workout: fields = input("duration", "Duration", placeholder: "45m") + input("distance", "Distance", placeholder: "5km")
                + input("kcal", "kcal")
            case .sleep: fields = input("duration", "Duration", placeholder: "7h30m")
            }
            let cells = """
                <tr data-entry="\(e.id)" data-version="\(e.version)"><td>\(clock(e.time, boundary))</td><td>\(HTML.escape(e.what))</td>\
                <td>\(HTML.escape(e.value))</td><td>\(HTML.escape(e.note ?? ""))</td><td>\(HTML.escape(e.source))</td>
                """
            guard token != nil else {
                rows += cells + "<td>-</td></tr>\n"
                continue
            }
            rows += cells + """
                <td><details><summary>Edit<span class="visually-hidden"> \(HTML.escape(e.what)) at \(clock(e.time, boundary))</span></summary>
                <form method="post" action="/edit">\(hidden)\(ids)<fieldset><legend>Change \(HTML.escape(e.what))</legend>\(fields)
                <button type="submit">Save</button></fieldset></form></details>
                <form method="post" action="/delete">\(hidden)\(ids)<button type="submit" class="delete">Delete<span class="visually-hidden"> \
                \(HTML.escape(e.what)) at \(clock(e.time, boundary))</span></button></form></td></tr>

                """
        }
        var messages = ""
        if let notice { messages += "<p role=\"status\" class=\"notice\">\(HTML.escape(notice))</p>\n" }
        if let problem { messages += "<p role=\"alert\" class=\"problem\">Nothing was changed: \(HTML.escape(problem))</p>\n" }
        let next = day < today ? " · <a href=\"/entries?day=\(day.adding(1))\">\(day.adding(1)) →</a>" : ""
        let body = """
            \(messages)<p><a href="/entries?day=\(day.adding(-1))">← \(day.adding(-1))</a>\(next)</p>
            \(rows.isEmpty ? "<p>Nothing recorded on \(day).</p>" : """
            <div class="table"><table><caption>Everything recorded on \(day)</caption>
            <thead><tr><th scope="col">Time</th><th scope="col">What</th><th scope="col">Value</th><th scope="col">Note</th>\
            <th scope="col">Source</th><th scope="col">Change</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></div>
            """)
            <p class="muted">An edit is a new version of the entry and a deletion a tombstone: both reach the server and your other \
            installs, and <code>healthgate history ID</code> shows every version.</p>
            """
        return HTML.page(title: "Entries of \(day)", current: "/entries", body: body)
    }
}
