import Foundation
import HealthModel

/// How every command prints: JSON (pretty, sorted keys, times as ISO 8601 UTC), JSON lines for
/// streams, left-aligned tables, and standard error. The `healthgate` executable and the driver
/// families' command targets share it.
public enum CommandOutput {
    static func encoder(pretty: Bool) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(ISO8601.string(date))
        }
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return encoder
    }

    /// `value` as pretty JSON on standard output.
    public static func printJSON(_ value: some Encodable) throws {
        let data = try encoder(pretty: true).encode(value)
        // Linux's encoder prints an empty array over three lines. Only a short text can be one
        // (a long one is not scanned: `stats --json` prints hundreds of kilobytes).
        let isEmptyArray = data.count < 16 && data.filter { ![0x20, 0x0A, 0x0D, 0x09].contains($0) } == Data("[]".utf8)
        print(isEmptyArray ? "[]" : String(decoding: data, as: UTF8.self))
    }

    /// `value` as one line of JSON on standard output, flushed at once (a stream of readings).
    public static func printJSONLine(_ value: some Encodable) throws {
        let data = try encoder(pretty: false).encode(value)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// `text` as one line on standard output, written at once: a stream of readings reaches a
    /// pipe (`| tee`, `| grep`) as it comes, where `print` would hold it in a buffer.
    public static func printLine(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Prints rows as left-aligned columns under a header.
    public static func printTable(_ header: [String], _ rows: [[String]]) {
        // Cells hold text from files and devices (names, notes): shown, not obeyed.
        let rows = rows.map { $0.map { DisplayText.safe($0, limit: 200) } }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        print(line(header))
        for row in rows { print(line(row)) }
    }

    /// `value * scale` with `decimals` digits after the point; `-` for none.
    public static func number(_ value: Double?, decimals: Int = 1, scale: Double = 1) -> String {
        guard let value, value.isFinite else { return "-" }
        return String(format: "%.\(decimals)f", value * scale)
    }

    /// `1 meal`, `2 meals`, `0 days`.
    public static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    public static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    public static func stderr(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// A command that could not do its work although its command line was fine (a device that
/// cannot be opened): printed by `healthgate` as one line `healthgate: MESSAGE`, exit status 1.
public struct CommandFailure: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ description: String) { self.description = description }
}
