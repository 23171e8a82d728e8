#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import BluetoothCentral
import BLEHost
@testable import BLERuntime
import TestSupport

/// Collects an async stream in the background so tests can wait for conditions with a timeout.
final class Collector<T: Sendable>: Sendable {
    private final class Storage: Sendable {
        let items = Mutex<[T]>([])
    }
    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<T>) {
        let storage = storage
        task = Task { for await x in stream { storage.items.withLock { $0.append(x) } } }
    }

    var values: [T] { storage.items.withLock { $0 } }

    /// Polls until `condition` holds on the collected values (at most ``Patience/limit``).
    @discardableResult
    func wait(_ what: String, until condition: ([T]) -> Bool) async throws -> [T] {
        try await eventually(what, detail: "have \(values.count)") { condition(values) }
        return values
    }

    deinit { task.cancel() }

    /// A thread-safe list to append to from a closure.
    final class Sink: Sendable {
        private let items = Mutex<[T]>([])
        func append(_ x: T) { items.withLock { $0.append(x) } }
        var values: [T] { items.withLock { $0 } }
    }
}

/// A host runtime connected to `peer`, started; closed by `body`'s end whatever happens.
func withHost(_ peer: BLEPeer, timeout: Duration = .seconds(120), snoopPath: String? = nil,
              _ body: @escaping @Sendable (HostRuntime) async throws -> Void) async throws {
    var configuration = HostRuntime.Configuration()
    configuration.commandTimeout = .seconds(2)
    configuration.snoopPath = snoopPath
    if ProcessInfo.processInfo.environment["HG_BLE_LOG"] != nil {
        configuration.log = { print("[ble] \($0)") }
    }
    let runtime = try HostRuntime.open(peer.h4, configuration: configuration)
    do {
        try await withTimeout(timeout, "test body") {
            try await runtime.start()
            try await body(runtime)
        }
    } catch {
        await runtime.close()
        throw error
    }
    await runtime.close()
}
