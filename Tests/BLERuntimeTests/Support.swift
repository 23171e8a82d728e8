import Testing
import TestSupport

/// Runs `body` and fails with `TestTimeout` if it has not ended after `limit` (the body is then
/// cancelled): a guard against hangs, ``Patience/limit`` unless a test says otherwise.
func withTimeout<T: Sendable>(_ limit: Duration = Patience.limit, _ what: String = "operation",
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
