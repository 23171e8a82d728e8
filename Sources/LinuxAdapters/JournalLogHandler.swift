public import Foundation
import HealthModel
public import Logging
import Synchronization

/// Log lines on standard error that read well in the journal and in a terminal:
/// `warning forwarding failed driver=inbox error="..."`. Under systemd (`JOURNAL_STREAM` set)
/// each line starts with its syslog priority (`<4>`), which journald turns into the entry's
/// priority, and no time (the journal has it); elsewhere lines start with the UTC time.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String
    let journal: Bool
    private static let output = Mutex(())

    public init(label: String, level: Logger.Level, journal: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil) {
        self.label = label
        logLevel = level
        self.journal = journal
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = journal ? "<\(Self.priority(event.level))>" : ISO8601.string(Date()) + " "
        line += Self.format(level: event.level, message: "\(event.message)",
                            metadata: metadata.merging(event.metadata ?? [:]) { $1 })
        line += "\n"
        Self.output.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// `level message key=value ...`, keys sorted, values quoted when they hold spaces or quotes.
    public static func format(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var line = "\(level) \(message)"
        for key in metadata.keys.sorted() {
            let value = "\(metadata[key]!)"
            let plain = !value.isEmpty && !value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline })
            line += " \(key)=" + (plain ? value : "\"" + value.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n") + "\"")
        }
        return line
    }

    /// syslog priorities (sd-daemon.h): 7 debug ... 2 critical.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
