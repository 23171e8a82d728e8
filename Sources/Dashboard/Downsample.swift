/// A point of a series: `x` in any unit that grows with time (seconds), `y` the value.
public struct ChartPoint: Equatable, Sendable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// Long series reduced for drawing: min-max decimation. The x range is cut into `columns` equal
/// columns (one per pixel of the chart's width); of each column's points only its lowest and its
/// highest are kept, in their time order. No peak and no trough is lost, whatever the length of
/// the series, and a chart never holds more than two points per pixel.
public enum Downsample {
    public static func minMax(_ points: [ChartPoint], columns: Int) -> [ChartPoint] {
        guard columns > 0, points.count > 2 * columns, let first = points.first, let last = points.last, last.x > first.x else {
            return points
        }
        let width = (last.x - first.x) / Double(columns)
        var kept: [ChartPoint] = []
        kept.reserveCapacity(2 * columns)
        var column = -1
        var low = 0, high = 0
        func flush(_ start: Int) {
            guard column >= 0 else { return }
            if low == high {
                kept.append(points[low])
            } else {
                kept.append(points[min(low, high)])
                kept.append(points[max(low, high)])
            }
        }
        for (i, p) in points.enumerated() {
            let c = min(columns - 1, Int((p.x - first.x) / width))
            if c != column {
                flush(i)
                column = c
                low = i
                high = i
            } else {
                if p.y < points[low].y { low = i }
                if p.y > points[high].y { high = i }
            }
        }
        flush(points.count)
        return kept
    }
}
