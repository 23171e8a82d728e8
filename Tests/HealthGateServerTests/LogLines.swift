import Logging
import Synchronization

/// A logger whose lines are kept for the test to read.
final class LogLines: Sendable {
    private let kept = Mutex<[String]>([])

    var lines: [String] { kept.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(sink: self) }
    }

    private struct Handler: LogHandler {
        let sink: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            sink.kept.withLock { $0.append(event.message.description) }
        }
    }
}
