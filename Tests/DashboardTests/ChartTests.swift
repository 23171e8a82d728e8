import Foundation
import FoundationXML
import Testing
@testable import Dashboard
import Hummingbird

/// The SVG and HTML the pages are made of, parsed: titles, descriptions, axes, bars equal to the
/// data, gaps drawn, text escaped, long series reduced without losing a peak.
@Suite struct ChartTests {
    static func parse(_ svg: String) throws -> XMLElement {
        try #require(try XMLDocument(xmlString: svg, options: []).rootElement())
    }

    /// An attribute's value (Foundation's `attribute(forName:)` finds none on Linux when the
    /// document has a default namespace, as SVG has).
    static func attr(_ e: XMLElement, _ name: String) -> String? {
        e.attributes?.first { $0.name == name }?.stringValue
    }

    static func elements(_ root: XMLElement, _ name: String) -> [XMLElement] {
        var found: [XMLElement] = []
        func walk(_ e: XMLElement) {
            if e.localName == name { found.append(e) }
            for case let child as XMLElement in e.children ?? [] { walk(child) }
        }
        walk(root)
        return found
    }

    static let days: [DailyBars.Day] = [
        .init(label: "2026-03-27", value: 1800), .init(label: "2026-03-28", value: nil), .init(label: "2026-03-29", value: 2250),
        .init(label: "2026-03-30", value: 0.5), .init(label: "2026-03-31", value: nil),
    ]

    @Test func barsEqualTheDataAndGapsAreDrawn() throws {
        let chart = DailyBars(id: "water", title: "Water per day", description: "Water drunk each day.", unit: "ml", days: Self.days, goal: 2000)
        let svg = try Self.parse(chart.svg())
        #expect(Self.attr(svg, "role") == "img")
        #expect(Self.attr(svg, "aria-labelledby") == "water-title water-desc")
        #expect(Self.elements(svg, "title").first?.stringValue == "Water per day")
        #expect(Self.elements(svg, "desc").first?.stringValue == "Water drunk each day.")
        let rects = Self.elements(svg, "rect").filter { Self.attr($0, "data-day") != nil }
        #expect(rects.map { Self.attr($0, "data-day") } == Self.days.map(\.label))
        let bars = rects.filter { Self.attr($0, "class")?.hasPrefix("bar") == true }
        #expect(bars.map { Double(Self.attr($0, "data-value")!) } == [1800, 2250, 0.5])
        // Met days are marked: 2250 >= 2000.
        #expect(bars.map { Self.attr($0, "class") } == ["bar", "bar met", "bar"])
        let gaps = rects.filter { Self.attr($0, "class") == "gap" }
        #expect(gaps.map { Self.attr($0, "data-day") } == ["2026-03-28", "2026-03-31"])
        #expect(gaps.allSatisfy { $0.stringValue?.contains("no data") == true })
        // Bar heights are proportional to the values, on one baseline.
        let heights = bars.map { Double(Self.attr($0, "height")!)! }
        #expect(abs(heights[1] / heights[0] - 2250 / 1800) < 0.01)
        let bottoms = bars.map { Double(Self.attr($0, "y")!)! + Double(Self.attr($0, "height")!)! }
        #expect(bottoms.allSatisfy { abs($0 - bottoms[0]) < 0.2 })
        // The goal line at 2000, the y axis labelled from 0 past the highest value, ascending.
        let goal = try #require(Self.elements(svg, "line").first { Self.attr($0, "class") == "goal" })
        #expect(Self.attr(goal, "data-value") == "2000")
        let yLabels = Self.elements(svg, "text").filter { Self.attr($0, "class") == "y-label" }.compactMap { Double($0.stringValue ?? "") }
        #expect(yLabels.first == 0 && (yLabels.last ?? 0) >= 2250 && yLabels == yLabels.sorted() && yLabels.count >= 3)
        let xLabels = Self.elements(svg, "text").filter { Self.attr($0, "class") == "x-label" }.map(\.stringValue)
        #expect(xLabels.first == "03-27")
    }

    @Test func aChartOfNothingIsAllGaps() throws {
        let empty = (1...7).map { DailyBars.Day(label: "2026-04-0\($0)", value: nil) }
        let svg = try Self.parse(DailyBars(id: "w", title: "t", description: "d", unit: "ml", days: empty, goal: nil).svg())
        #expect(Self.elements(svg, "rect").filter { Self.attr($0, "class") == "gap" }.count == 7)
        #expect(Self.elements(svg, "line").allSatisfy { Self.attr($0, "class") != "goal" })
    }

    @Test func textFromOutsideIsEscapedInChartsAndPages() throws {
        let hostile = "<script>alert(\"x\")</script> & 'y'"
        #expect(HTML.escape(hostile) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;")
        let chart = DailyBars(id: "h", title: hostile, description: hostile, unit: hostile,
                              days: [.init(label: hostile, value: 1)], goal: 1)
        let text = chart.svg()
        #expect(!text.contains("<script>"))
        let svg = try Self.parse(text)
        #expect(Self.elements(svg, "title").first?.stringValue == hostile)
        #expect(Self.elements(svg, "rect").contains { Self.attr($0, "data-day") == hostile })
    }

    @Test func longSeriesKeepEveryPeakAndAtMostTwoPointsPerPixel() {
        var generator = SystemRandomNumberGenerator()
        var points: [ChartPoint] = []
        var y = 120.0
        for i in 0..<100_000 {
            y += Double.random(in: -1...1, using: &generator)
            points.append(ChartPoint(x: Double(i), y: y))
        }
        // Spikes a single sample wide, in and out.
        points[31_337].y = 1_000
        points[77_777].y = -1_000
        let reduced = Downsample.minMax(points, columns: 600)
        #expect(reduced.count <= 1_200 && reduced.count > 600)
        #expect(reduced.contains(points[31_337]) && reduced.contains(points[77_777]))
        #expect(reduced.map(\.x) == reduced.map(\.x).sorted())
        // Each column's highest and lowest point are kept.
        let width = 99_999.0 / 600
        for column in stride(from: 0, to: 600, by: 37) {
            let inColumn = points.filter { min(599, Int($0.x / width)) == column }
            let high = inColumn.max { $0.y < $1.y }!, low = inColumn.min { $0.y < $1.y }!
            #expect(reduced.contains(high) && reduced.contains(low), "column \(column)")
        }
        // A short series is drawn as it is.
        #expect(Downsample.minMax(Array(points.prefix(900)), columns: 600) == Array(points.prefix(900)))
    }

    @Test func onlyLoopbackNamesAreServed() {
        for good in ["localhost:8470", "127.0.0.1:8470", "[::1]:8470", "LOCALHOST", "127.0.0.1"] {
            #expect(LoopbackHostMiddleware.allowed(good), "\(good)")
        }
        for bad in [nil, "", "evil.example:8470", "127.0.0.1.evil.example:8470", "[::1", "192.168.1.5:8470", "localhost.:8470"] {
            #expect(!LoopbackHostMiddleware.allowed(bad), "\(bad ?? "nil")")
        }
    }
}
