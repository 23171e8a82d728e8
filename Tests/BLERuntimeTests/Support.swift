import Testing

struct TestTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(what)" }
}

/// Runs `body` and fails with `TestTimeout` if it takes longer than `limit` (the body is cancelled).
/// The limit is counted in 100 ms sleeps, not wall-clock time: when other tests keep the task pool
/// busy (seen: ~40 s in a full `swift test` on 2 cores) the limit stretches instead of firing
/// before a body that could not run.
func withTimeout<T: Sendable>(_ limit: Duration, _ what: String = "operation",
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            for _ in 0..<max(1, Int(limit / .milliseconds(100))) { try await Task.sleep(for: .milliseconds(100)) }
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TestTimeout(what: what) }
        return value
    }
}
