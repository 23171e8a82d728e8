public import Foundation

/// One bar per local day (or per hour of the day, per any label), with a goal line, as SVG: what
/// the water and vaping pages draw. Days without any entry are drawn as hatched gaps labelled "no data", never as
/// zero bars and never averaged away. The SVG has a title and a description (`role="img"`,
/// `aria-labelledby`), and each bar carries its day and value (`data-day`, `data-value`) so a
/// test or a reader can check it against the table beside it.
public struct DailyBars: Sendable {
    public struct Day: Equatable, Sendable {
        /// `2026-03-29`.
        public var label: String
        /// nil: no data that day.
        public var value: Double?
        /// The value cut into the chart's ``parts`` (stacked, in their order), or nil for one bar.
        public var parts: [Double]?

        public init(label: String, value: Double?, parts: [Double]? = nil) {
            self.label = label
            self.value = value
            self.parts = parts
        }
    }

    /// Unique on its page (the SVG's element ids start with it).
    public var id: String
    public var title: String
    public var description: String
    public var unit: String
    public var days: [Day]
    public var goal: Double?
    /// The goal is a most (vaping) rather than a least (water).
    public var goalIsMaximum = false
    public var width = 640
    public var height = 240
    /// What a stacked bar's parts are (bottom first), and their style sheet classes.
    public var parts: [(name: String, style: String)] = []
    /// The label under a bar: `03-29` for a day's `2026-03-29`.
    public var axisLabel: @Sendable (String) -> String = { String($0.suffix(5)) }

    public init(id: String, title: String, description: String, unit: String, days: [Day], goal: Double?, goalIsMaximum: Bool = false) {
        self.id = id
        self.title = title
        self.description = description
        self.unit = unit
        self.days = days
        self.goal = goal
        self.goalIsMaximum = goalIsMaximum
    }

    static let left = 56.0, right = 12.0, top = 28.0, bottom = 40.0

    /// A round top for the y axis at or above `value`, and its tick step (1, 2 or 5 times a power of ten).
    /// `counts`: whole numbers only (sessions), so no tick falls between two.
    static func scale(_ value: Double, counts: Bool = false) -> (top: Double, step: Double) {
        guard value > 0, value.isFinite else { return (1, counts ? 1 : 0.25) }
        let rough = value / 4
        let magnitude = pow(10, floor(log10(rough)))
        var step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= rough } ?? 10 * magnitude
        if counts { step = max(1, step.rounded(.up)) }
        return (step * ceil(value / step), step)
    }

    public func svg() -> String {
        let w = Double(width), h = Double(height)
        let plotW = w - Self.left - Self.right, plotH = h - Self.top - Self.bottom
        let highest = max(days.compactMap(\.value).max() ?? 0, goal ?? 0)
        let counts = days.allSatisfy { $0.value.map { $0 == $0.rounded() } ?? true } && (goal.map { $0 == $0.rounded() } ?? true)
        let (top, step) = Self.scale(highest * 1.05, counts: counts)
        func y(_ v: Double) -> Double { Self.top + plotH - plotH * v / top }
        let slot = days.isEmpty ? plotW : plotW / Double(days.count)
        var out = SVGChart.open(id: id, width: width, height: h, title: title, description: description, defs: """
            <defs><pattern id="\(id)-nodata" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
            <rect width="6" height="6" fill="#f2f2f2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="2"/></pattern></defs>
            """)
        // The y axis: gridlines and labels at each step.
        out += SVGChart.valueAxis(low: 0, high: top, step: step, left: Self.left, right: w - Self.right, unit: unit, y: y)
        // Bars, and hatched gaps for the days without data.
        let labelEvery = max(1, Int((Double(days.count) / 8).rounded(.up)))
        for (i, day) in days.enumerated() {
            let x = Self.left + Double(i) * slot
            let barX = Self.f(x + slot * 0.1), barW = Self.f(max(1, slot * 0.8))
            let label = HTML.escape(day.label)
            if let value = day.value, let parts = day.parts {
                out += "<g class=\"stack\" data-day=\"\(label)\" data-value=\"\(Self.number(value))\">"
                var base = 0.0
                for (part, amount) in zip(self.parts, parts) where amount > 0 {
                    out += "<rect class=\"\(part.style)\" data-part=\"\(HTML.escape(part.name))\" data-value=\"\(Self.number(amount))\" "
                        + "x=\"\(barX)\" y=\"\(Self.f(y(base + amount)))\" width=\"\(barW)\" height=\"\(Self.f(plotH * amount / top))\">"
                        + "<title>\(label): \(HTML.escape(part.name)) \(Self.number(amount)) \(HTML.escape(unit))</title></rect>"
                    base += amount
                }
                out += "</g>\n"
            } else if let value = day.value {
                let met = goal.map { goalIsMaximum ? value <= $0 : value >= $0 } ?? false
                out += "<rect class=\"bar\(met ? " met" : "")\" data-day=\"\(label)\" data-value=\"\(Self.number(value))\" "
                    + "x=\"\(barX)\" y=\"\(Self.f(y(value)))\" width=\"\(barW)\" height=\"\(Self.f(plotH * value / top))\">"
                    + "<title>\(label): \(Self.number(value)) \(HTML.escape(unit))</title></rect>\n"
            } else {
                out += "<rect class=\"gap\" data-day=\"\(label)\" fill=\"url(#\(id)-nodata)\" x=\"\(barX)\" y=\"\(Self.f(Self.top))\" width=\"\(barW)\" "
                    + "height=\"\(Self.f(plotH))\"><title>\(label): no data</title></rect>\n"
            }
            if i % labelEvery == 0 {
                out += "<text class=\"x-label\" x=\"\(Self.f(x + slot / 2))\" y=\"\(Self.f(h - Self.bottom + 16))\" "
                    + "text-anchor=\"middle\">\(HTML.escape(axisLabel(day.label)))</text>\n"
            }
        }
        let baseline = Self.f(Self.top + plotH)
        out += "<line class=\"axis\" x1=\"\(Self.f(Self.left))\" y1=\"\(baseline)\" x2=\"\(Self.f(w - Self.right))\" y2=\"\(baseline)\"/>\n"
        if let goal {
            let gy = Self.f(y(goal))
            out += "<line class=\"goal\" data-value=\"\(Self.number(goal))\" x1=\"\(Self.f(Self.left))\" y1=\"\(gy)\" "
                + "x2=\"\(Self.f(w - Self.right))\" y2=\"\(gy)\"/>"
                + "<text x=\"\(Self.f(w - Self.right))\" y=\"\(Self.f(y(goal) - 4))\" text-anchor=\"end\">"
                + "goal \(goalIsMaximum ? "at most " : "")\(Self.number(goal)) \(HTML.escape(unit))</text>\n"
        }
        return out + "</svg>"
    }

    /// Coordinates with at most one decimal.
    static func f(_ v: Double) -> String { number((v * 10).rounded() / 10) }

    /// `1500`, `0.5`: no trailing zeros, no exponent.
    static func number(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int(v)) }
        return String(format: "%.2f", v).replacingOccurrences(of: #"\.?0+$"#, with: "", options: .regularExpression)
    }
}

/// What every chart of the pages begins with and how its value axis is drawn: one way.
enum SVGChart {
    /// `<svg ...>` with its title and description (`role="img"`, `aria-labelledby`), `id` its
    /// element id; `attributes` more of the element's (already escaped), `defs` its definitions.
    static func open(id: String, width: Int, height: Double, title: String, description: String, attributes: String = "",
                     defs: String = "") -> String {
        """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(width) \(DailyBars.number(height))" role="img" \
        aria-labelledby="\(id)-title \(id)-desc" id="\(id)"\(attributes.isEmpty ? "" : " " + attributes)>
        <title id="\(id)-title">\(HTML.escape(title))</title>
        <desc id="\(id)-desc">\(HTML.escape(description))</desc>
        \(defs)

        """
    }

    /// Gridlines across `left...right` and their labels at each `step` from `low` through `high`,
    /// then the unit at the top left; `y` places a value.
    static func valueAxis(low: Double, high: Double, step: Double, left: Double, right: Double, unit: String,
                          y: (Double) -> Double) -> String {
        var out = ""
        var tick = low
        while tick <= high + step / 2 {
            let ty = DailyBars.f(y(tick))
            out += "<line class=\"grid\" x1=\"\(DailyBars.f(left))\" y1=\"\(ty)\" x2=\"\(DailyBars.f(right))\" y2=\"\(ty)\"/>"
                + "<text class=\"y-label\" x=\"\(DailyBars.f(left - 6))\" y=\"\(ty)\" text-anchor=\"end\" dominant-baseline=\"middle\">"
                + "\(DailyBars.number(tick))</text>\n"
            tick += step
        }
        return out + "<text x=\"4\" y=\"14\">\(HTML.escape(unit))</text>\n"
    }
}
