public import Foundation

/// Values over time as SVG lines (and dots): a workout's heart rate against elapsed time, a
/// weight trend against days. Each line is a list of runs: where the data stops (a pause, a lost
/// strap, a week without weighing) the line stops too and starts again after the gap, so nothing
/// is drawn where nothing was measured. Runs are expected reduced already (``Downsample``).
/// Like ``DailyBars`` the SVG has a title and a description, and the plot area says where it
/// is (`data-left`, `data-width`, `data-x-max`) so the crosshair script can read any x back.
public struct TimeSeriesChart: Sendable {
    public struct Line: Sendable {
        /// `series`, `trend`, ... (the style sheet's class).
        public var style: String
        public var runs: [[ChartPoint]]
        /// Drawn as dots, not joined (raw weighings under their trend).
        public var dots = false

        public init(style: String, runs: [[ChartPoint]], dots: Bool = false) {
            self.style = style
            self.runs = runs
            self.dots = dots
        }
    }

    public var id: String
    public var title: String
    public var description: String
    public var unit: String
    public var lines: [Line]
    /// The x axis runs from 0 to `xMax`.
    public var xMax: Double
    /// Where the x axis is labelled, and how.
    public var xTicks: [(x: Double, label: String)]
    /// A horizontal line (a goal), labelled.
    public var goal: (value: Double, label: String)?
    public var width = 640
    public var height = 180

    public init(id: String, title: String, description: String, unit: String, lines: [Line], xMax: Double,
                xTicks: [(x: Double, label: String)], goal: (value: Double, label: String)? = nil) {
        self.id = id
        self.title = title
        self.description = description
        self.unit = unit
        self.lines = lines
        self.xMax = xMax
        self.xTicks = xTicks
        self.goal = goal
    }

    static let left = 56.0, right = 12.0, top = 24.0, bottom = 30.0

    /// A round range around `low...high` and its tick step (1, 2 or 5 times a power of ten).
    static func range(_ low: Double, _ high: Double) -> (low: Double, high: Double, step: Double) {
        guard low.isFinite, high.isFinite else { return (0, 1, 0.25) }
        if high - low < 1e-9 { return range(low - 1, high + 1) }
        let (_, step) = DailyBars.scale(high - low)
        return (floor(low / step) * step, ceil(high / step) * step, step)
    }

    public func svg() -> String {
        let w = Double(width), h = Double(height)
        let plotW = w - Self.left - Self.right, plotH = h - Self.top - Self.bottom
        let values = lines.flatMap { $0.runs.joined().map(\.y) } + (goal.map { [$0.value] } ?? [])
        let (low, high, step) = Self.range(values.min() ?? 0, values.max() ?? 1)
        func x(_ v: Double) -> Double { Self.left + plotW * (xMax > 0 ? v / xMax : 0) }
        func y(_ v: Double) -> Double { Self.top + plotH - plotH * (v - low) / (high - low) }
        var out = SVGChart.open(id: id, width: width, height: h, title: title, description: description,
                                attributes: "class=\"series-chart\" data-left=\"\(DailyBars.f(Self.left))\" "
                                    + "data-width=\"\(DailyBars.f(plotW))\" data-x-max=\"\(DailyBars.number(xMax))\"")
        out += SVGChart.valueAxis(low: low, high: high, step: step, left: Self.left, right: w - Self.right, unit: unit, y: y)
        for t in xTicks {
            out += "<text class=\"x-label\" x=\"\(DailyBars.f(x(t.x)))\" y=\"\(DailyBars.f(h - 8))\" text-anchor=\"middle\">"
                + "\(HTML.escape(t.label))</text>\n"
        }
        let baseline = DailyBars.f(Self.top + plotH)
        out += "<line class=\"axis\" x1=\"\(DailyBars.f(Self.left))\" y1=\"\(baseline)\" x2=\"\(DailyBars.f(w - Self.right))\" y2=\"\(baseline)\"/>\n"
        for line in lines {
            for run in line.runs where !run.isEmpty {
                if line.dots || run.count == 1 {
                    // Dots, and a lone sample between two gaps: a point, not a line of one point.
                    out += "<g class=\"\(line.style)\" data-points=\"\(run.count)\">"
                        + run.map { "<circle cx=\"\(DailyBars.f(x($0.x)))\" cy=\"\(DailyBars.f(y($0.y)))\" r=\"2.5\"/>" }.joined() + "</g>\n"
                } else {
                    let points = run.map { "\(DailyBars.f(x($0.x))),\(DailyBars.f(y($0.y)))" }.joined(separator: " ")
                    out += "<polyline class=\"\(line.style)\" data-points=\"\(run.count)\" points=\"\(points)\"/>\n"
                }
            }
        }
        if let goal {
            let gy = DailyBars.f(y(goal.value))
            out += "<line class=\"goal\" data-value=\"\(DailyBars.number(goal.value))\" x1=\"\(DailyBars.f(Self.left))\" y1=\"\(gy)\" "
                + "x2=\"\(DailyBars.f(w - Self.right))\" y2=\"\(gy)\"/><text x=\"\(DailyBars.f(w - Self.right))\" "
                + "y=\"\(DailyBars.f(y(goal.value) - 4))\" text-anchor=\"end\">\(HTML.escape(goal.label))</text>\n"
        }
        out += "<line class=\"cursor\" x1=\"-10\" y1=\"\(DailyBars.f(Self.top))\" x2=\"-10\" y2=\"\(baseline)\"/>\n"
        return out + "</svg>"
    }

    /// Points in time order cut into runs wherever two neighbours are more than `gap` apart.
    public static func runs(_ points: [ChartPoint], gap: Double) -> [[ChartPoint]] {
        var runs: [[ChartPoint]] = []
        var current: [ChartPoint] = []
        for p in points {
            if let last = current.last, p.x - last.x > gap {
                runs.append(current)
                current = []
            }
            current.append(p)
        }
        if !current.isEmpty { runs.append(current) }
        return runs
    }

    /// How far apart two samples may be and still be joined: six times the usual interval
    /// (a watch's smart recording varies), at least 15 s.
    public static func gap(of times: [Double]) -> Double {
        guard times.count > 2 else { return 15 }
        var steps = zip(times, times.dropFirst()).map { $1 - $0 }
        steps.sort()
        return max(15, 6 * steps[steps.count / 2])
    }

    /// Ticks for elapsed seconds: a round step giving at most about six labels, as `m:ss`/`h:mm`.
    public static func elapsedTicks(_ duration: Double) -> [(x: Double, label: String)] {
        guard duration > 0 else { return [] }
        let steps: [Double] = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
        let step = steps.first { duration / $0 <= 6 } ?? 86400 * (duration / 86400 / 6).rounded(.up)
        return stride(from: 0, through: duration, by: step).map { ($0, clock($0)) }
    }

    /// `0:00`, `25:00`, `1:30:00`.
    public static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}

/// A route drawn as SVG from its own coordinates: no map tiles, no request anywhere, so opening
/// it tells nobody where the user was. The line is coloured by a metric in six steps of a
/// colour-blind-safe sequential scale (dark blue to yellow), with a legend in text; stretches
/// without the metric are grey.
public struct RouteMap: Sendable {
    public struct Point: Sendable, Equatable {
        public var latitude: Double
        public var longitude: Double
        public var value: Double?

        public init(latitude: Double, longitude: Double, value: Double?) {
            self.latitude = latitude
            self.longitude = longitude
            self.value = value
        }
    }

    /// The six steps, dark to light (viridis).
    public static let colours = ["#440154", "#414487", "#2a788e", "#22a884", "#7ad151", "#fde725"]

    public var id: String
    public var title: String
    public var description: String
    public var points: [Point]
    public var width = 640
    /// At most this many points are drawn (every n-th kept, the last always).
    public var limit = 1500

    public init(id: String, title: String, description: String, points: [Point]) {
        self.id = id
        self.title = title
        self.description = description
        self.points = points
    }

    /// The bounds of the six steps: equal steps between the 5th and 95th percentile, so one
    /// spike does not make the rest one colour. Empty when no point has a value.
    public static func steps(_ values: [Double]) -> [Double] {
        let sorted = values.sorted()
        guard let first = sorted.first else { return [] }
        let low = sorted[Int(Double(sorted.count - 1) * 0.05)], high = sorted[Int(Double(sorted.count - 1) * 0.95)]
        guard high > low else { return [first] }
        return (1..<colours.count).map { low + (high - low) * Double($0) / Double(colours.count) }
    }

    static func step(_ value: Double?, _ bounds: [Double]) -> Int? {
        guard let value, !bounds.isEmpty else { return nil }
        return bounds.firstIndex { value < $0 } ?? bounds.count
    }

    public func svg() -> String {
        let every = max(1, (points.count + limit - 1) / limit)
        var kept = stride(from: 0, to: points.count, by: every).map { points[$0] }
        if let last = points.last, kept.last != last { kept.append(last) }
        let lats = kept.map(\.latitude), lons = kept.map(\.longitude)
        let bounds = Self.steps(kept.compactMap(\.value))
        guard let south = lats.min(), let north = lats.max(), let west = lons.min(), let east = lons.max() else { return "" }
        // Equirectangular at the route's latitude: right for the few kilometres of a workout.
        let scaleX = cos((south + north) / 2 * .pi / 180)
        let spanX = max((east - west) * scaleX, 1e-9), spanY = max(north - south, 1e-9)
        let margin = 10.0, w = Double(width)
        let scale = min((w - 2 * margin) / spanX, (w * 0.75 - 2 * margin) / spanY)
        let h = (spanY * scale + 2 * margin).rounded(.up)
        func at(_ p: Point) -> (x: String, y: String) {
            (DailyBars.f(margin + (p.longitude - west) * scaleX * scale), DailyBars.f(margin + (north - p.latitude) * scale))
        }
        func xy(_ p: Point) -> String { let (x, y) = at(p); return x + "," + y }
        var out = SVGChart.open(id: id, width: width, height: h, title: title, description: description, attributes: "class=\"route\"")
        // Consecutive points of one step form one line; each line starts where the last ended.
        var i = 0
        while i < kept.count - 1 {
            let s = Self.step(kept[i + 1].value, bounds)
            var j = i + 1
            while j + 1 < kept.count, Self.step(kept[j + 1].value, bounds) == s { j += 1 }
            let colour = s.map { Self.colours[$0] } ?? "#9a9a9a"
            out += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"3\" stroke-linejoin=\"round\" "
                + "data-step=\"\(s.map(String.init) ?? "none")\" points=\"\(kept[i...j].map(xy).joined(separator: " "))\"/>\n"
            i = j
        }
        if let first = kept.first, let last = kept.last {
            for (point, name) in [(first, "start"), (last, "finish")] {
                out += "<circle class=\"\(name)\" r=\"6\" cx=\"\(at(point).x)\" cy=\"\(at(point).y)\"><title>\(name)</title></circle>"
            }
            out += "\n"
        }
        return out + "</svg>"
    }

    /// The legend as HTML: one swatch per step with its range in `unit`.
    public func legend(unit: String, format: (Double) -> String) -> String {
        let bounds = Self.steps(points.compactMap(\.value))
        guard !bounds.isEmpty else { return "" }
        var items: [String] = []
        for (i, colour) in Self.colours.prefix(bounds.count + 1).enumerated() {
            let text = i == 0 ? "below \(format(bounds[0]))"
                : i == bounds.count ? "\(format(bounds[i - 1])) and above" : "\(format(bounds[i - 1])) to \(format(bounds[i]))"
            items.append("<li><span class=\"key\" style=\"background:\(colour)\"></span> \(HTML.escape(text)) \(HTML.escape(unit))</li>")
        }
        return "<ul class=\"legend\">" + items.joined() + "</ul>"
    }
}
