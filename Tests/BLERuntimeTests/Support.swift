import Testing

struct TestTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(what)" }
}

/// Runs `body` and fails with `TestTimeout` if it takes longer than `limit` (the body is cancelled).
func withTimeout<T: Sendable>(_ limit: Duration, _ what: String = "operation",
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TestTimeout(what: what) }
        return value
    }
}
