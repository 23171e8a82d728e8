public import Logging
import Synchronization

/// One line per `interval` for one kind of event, and how many were held back meanwhile. Pure.
public struct LogWindow: Sendable {
    public let interval: Duration
    private var last: ContinuousClock.Instant?
    private var heldBack = 0

    public init(interval: Duration) {
        self.interval = interval
    }

    /// An event at `now`: nil if its line is held back, else the number held back since the
    /// last line written.
    public mutating func admit(now: ContinuousClock.Instant) -> Int? {
        if let last, now - last < interval {
            heldBack += 1
            return nil
        }
        defer { last = now; heldBack = 0 }
        return heldBack
    }
}

/// A logger for events that can come in floods (refused connections, slow clients, forced
/// checkpoints): each kind writes at most one line per interval, which says how many like it
/// were left out since the previous one.
public final class RateLimitedLog: Sendable {
    public let logger: Logger
    private let interval: Duration
    private let windows = Mutex<[String: LogWindow]>([:])

    public init(logger: Logger, interval: Duration = .seconds(10)) {
        self.logger = logger
        self.interval = interval
    }

    /// Logs `message` unless a line of the same `kind` was written less than the interval ago.
    public func log(_ level: Logger.Level, kind: String, _ message: @autoclosure () -> String) {
        let now = ContinuousClock.now
        let interval = interval
        let heldBack = windows.withLock { windows in
            windows[kind, default: LogWindow(interval: interval)].admit(now: now)
        }
        guard let heldBack else { return }
        let suffix = heldBack == 0 ? "" : " (and \(heldBack) more like it since the last such line)"
        logger.log(level: level, "\(message())\(suffix)")
    }
}
