import CommandSupport
import Foundation
import HealthModel
import HealthReports
import HealthStore

/// Terminal output helpers: JSON, tables, durations, and the progress bar.
enum Output {
    static func printJSON(_ value: some Encodable) throws { try CommandOutput.printJSON(value) }

    /// Prints rows as left-aligned columns under a header.
    static func printTable(_ header: [String], _ rows: [[String]]) { CommandOutput.printTable(header, rows) }

    /// `1:02:03` or `12:34`.
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite else { return "-" }
        let total = Int(saturating: seconds.rounded())
        let h = total / 3600, m = total % 3600 / 60, s = total % 60
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    static func number(_ value: Double?, decimals: Int = 1, scale: Double = 1) -> String {
        CommandOutput.number(value, decimals: decimals, scale: scale)
    }

    static func int(_ value: Int?) -> String { value.map(String.init) ?? "-" }

    /// The units the user reads (`define units`), the defaults (ml, kg) when none are defined.
    /// Human output shows volumes and masses in them through HealthModel's ``Quantities``; JSON
    /// keeps the stored ml and kg.
    static func preferences(_ store: HealthStore) async throws -> Preferences {
        try await Reports.preferences(store)
    }

    /// The user's days (``DayBoundary``): their day start (`define day-start`) in this machine's
    /// time zone.
    static func days(_ store: HealthStore) async throws -> DayBoundary {
        try await preferences(store).days(in: .current)
    }

    /// `1 meal`, `2 meals`, `0 days`.
    static func count(_ n: Int, _ noun: String) -> String { CommandOutput.count(n, noun) }

    /// Minutes precision for tables: `2019-05-18 19:16`.
    static func shortTime(_ iso: String) -> String {
        String(iso.prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    static var stderrIsTerminal: Bool { CommandOutput.stderrIsTerminal }

    static func stderr(_ text: String) { CommandOutput.stderr(text) }
}

/// A ``ProgressBar`` updated from the pipeline's tasks: between files and within one (records).
final class SharedProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private var bar: ProgressBar
    private var file = (index: 0, total: 0, path: "", bytesDone: 0, bytesTotal: 0)

    init(enabled: Bool) { bar = ProgressBar(enabled: enabled) }

    /// A file starts (or, with `index == total`, all are done).
    func file(index: Int, total: Int, path: String, bytesDone: Int, bytesTotal: Int) {
        lock.withLock {
            file = (index, total, path, bytesDone, bytesTotal)
            bar.update(index: index, total: total, path: path, bytesDone: bytesDone, bytesTotal: bytesTotal)
        }
    }

    /// The current file is `bytesRead` bytes and `records` records in.
    func within(bytesRead: Int, records: Int) {
        lock.withLock {
            bar.update(index: file.index, total: file.total, path: file.path, bytesDone: file.bytesDone + bytesRead,
                       bytesTotal: file.bytesTotal, records: records)
        }
    }

    func finish() { lock.withLock { bar.finish() } }
}

/// A one-line progress bar on standard error, drawn only on a terminal.
struct ProgressBar {
    let enabled: Bool
    private var lastDraw = Date.distantPast

    init(enabled: Bool) { self.enabled = enabled }

    /// Draws the bar (at most every 0.1 s): files done of `total`, bytes of all files (those of
    /// the current file included as it is read) and, within a file, the records read from it.
    mutating func update(index: Int, total: Int, path: String, bytesDone: Int, bytesTotal: Int, records: Int? = nil) {
        guard enabled, total > 0 else { return }
        let now = Date()
        guard index == total || now.timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = now
        Output.stderr("\r\u{1B}[2K" + Self.line(index: index, total: total, path: path, bytesDone: bytesDone, bytesTotal: bytesTotal,
                                                records: records))
    }

    /// `[######------] 1/3 files  12.5/80.0 MB  41,250 records  export.xml`.
    static func line(index: Int, total: Int, path: String, bytesDone: Int, bytesTotal: Int, records: Int?) -> String {
        let fraction = bytesTotal > 0 ? min(1, Double(bytesDone) / Double(bytesTotal)) : Double(index) / Double(max(1, total))
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let name = (path as NSString).lastPathComponent
        let mb = String(format: "%.1f/%.1f MB", Double(bytesDone) / 1e6, Double(bytesTotal) / 1e6)
        let read = records.map { "  \($0) records" } ?? ""
        return "[\(bar)] \(min(index + 1, total))/\(total) files  \(mb)\(read)  \(name.prefix(40))"
    }

    func finish() {
        if enabled { Output.stderr("\r\u{1B}[2K") }
    }
}
