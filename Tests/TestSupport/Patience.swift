public import Foundation

/// How long a test waits for something that is to happen (a peer to connect, a daemon to log a
/// line, a process to exit) before it calls it a hang. A guard against hangs, never a timing:
/// `swift test` runs every suite at once, on 2 cores in CI, and a step that takes a second on an
/// idle machine has taken over two minutes there (`RecorderTests` with its Python peer: 45 to
/// 115 s when passing, one CI run failed at a one-minute guard). So the guard is generous;
/// `HEALTHGATE_TEST_PATIENCE` (seconds) sets another.
public enum Patience {
    public static let limit: Duration = {
        if let text = ProcessInfo.processInfo.environment["HEALTHGATE_TEST_PATIENCE"], let seconds = Int(text), seconds > 0 {
            return .seconds(seconds)
        }
        return .seconds(300)
    }()

    /// ``limit`` in seconds, for the helpers that count in `TimeInterval`.
    public static var seconds: TimeInterval { TimeInterval(limit.components.seconds) }
}

/// Something a test waited for did not happen within ``Patience/limit``.
public struct TestTimeout: Error, CustomStringConvertible {
    public var what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out: \(what)" }
}

/// Checks `condition` every `interval` until it holds, at most `limit`: whether it came to hold
/// (for an `#expect` with its own message).
public func cameTrue(within limit: Duration = Patience.limit, every interval: Duration = .milliseconds(50),
                     _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline, !Task.isCancelled {  // a cancelled sleep returns at once
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

/// Checks `condition` every `interval` until it holds; throws ``TestTimeout`` naming `what` (and
/// what `detail` says then, if given) when it still does not after `limit`.
public func eventually(_ what: String, every interval: Duration = .milliseconds(50), within limit: Duration = Patience.limit,
                       detail: @autoclosure () -> String = "", _ condition: () async throws -> Bool) async throws {
    guard try await cameTrue(within: limit, every: interval, condition) else {
        let more = detail()
        throw TestTimeout(what: more.isEmpty ? what : "\(what); \(more)")
    }
}
