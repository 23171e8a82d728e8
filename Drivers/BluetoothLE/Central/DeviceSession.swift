import Foundation
public import Timing

/// Keeps one configured device connected: connect, discover, subscribe; when the link drops or an
/// attempt fails, wait (exponential backoff with jitter) and start again, subscribing anew.
/// Notifications of every connection arrive on one stream that lives as long as the session.
/// The session runs on the central's serial executor (the host runtime's queue, or BlueZ's).
public actor DeviceSession {
    public struct Configuration: Sendable {
        public var address: DeviceAddress
        /// Characteristics to subscribe to after each connection.
        public var subscriptions: [BluetoothUUID]
        /// When false, subscribe to those of `subscriptions` the device has (at least one);
        /// when true, a missing one fails the attempt.
        public var requireAllSubscriptions = true
        /// Characteristics read after subscribing (e.g. Battery Level); their values arrive on
        /// `notifications` like notified ones. Those the device lacks are skipped.
        public var reads: [BluetoothUUID] = []
        public var connectTimeout: Duration = .seconds(5)
        public var operationTimeout: Duration = .seconds(10)
        public var backoff = Backoff.reconnect
        /// Runs after each connection's subscriptions and reads (e.g. asking a glucose meter for
        /// its stored records); gets the link, its database and the session's value stream.
        /// Its errors are not fatal to the connection.
        public var afterSubscribe: (@Sendable (any BLEConnection, GATTDatabase, AsyncStream<GATTNotification>.Continuation) async throws -> Void)?
        public init(address: DeviceAddress, subscriptions: [BluetoothUUID]) {
            self.address = address
            self.subscriptions = subscriptions
        }
    }

    public enum Event: Sendable, Equatable {
        /// Connected, discovered and subscribed (`attempt` counts connections, from 1).
        case ready(connection: Int)
        case disconnected(reason: HCIStatus?)
        case attemptFailed(String)
        /// Waiting this long before the next attempt.
        case retrying(after: Duration)
        /// The central is gone for good (`BLEError.isFinal`): the session stopped trying.
        case gaveUp(BLEError)
        case stopped
    }

    /// Sleeps; tests inject one that records the delays and returns at once. The default is
    /// `Task.sleep`: the `dispatchSleep` used before (an `asyncAfter` timer resuming a
    /// continuation) woke no sooner, measured from an actor on a queue executor like this one: on
    /// an idle pool both were 0.1 ms late at the median; on a pool kept busy by two CPU-bound tasks
    /// both were about 240 ms late at the median (up to 520 ms). Backoffs are 200 ms and more.
    public typealias Sleeper = @Sendable (Duration) async throws -> Void

    public nonisolated var unownedExecutor: UnownedSerialExecutor { runtime.unownedExecutor }
    public nonisolated let configuration: Configuration
    public nonisolated let notifications: AsyncStream<GATTNotification>
    public nonisolated let events: AsyncStream<Event>
    private let notificationSink: AsyncStream<GATTNotification>.Continuation
    private let eventSink: AsyncStream<Event>.Continuation
    private let runtime: any BLECentral
    private let sleep: Sleeper
    private let random: @Sendable () -> Double
    private var task: Task<Void, Never>?
    private var client: (any BLEConnection)?
    private var stopping = false
    public private(set) var connections = 0

    public init(runtime: any BLECentral, configuration: Configuration,
                sleep: @escaping Sleeper = { try await Task.sleep(for: $0) },
                random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.runtime = runtime
        self.configuration = configuration
        self.sleep = sleep
        self.random = random
        (notifications, notificationSink) = AsyncStream.makeStream(of: GATTNotification.self, bufferingPolicy: .bufferingNewest(8192))
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
    }

    public func start() {
        guard task == nil, !stopping else { return }
        task = Task { await self.run() }
    }

    /// Stops reconnecting and disconnects (bounded).
    public func stop() async {
        stopping = true
        task?.cancel()
        if let client { _ = try? await client.disconnect(timeout: .seconds(3)) }
        await task?.value
        task = nil
        eventSink.yield(.stopped)
        eventSink.finish()
        notificationSink.finish()
    }

    /// Discovers, subscribes and reads as configured.
    private func subscribe(_ client: any BLEConnection) async throws(BLEError) {
        let database = try await client.discover(timeout: configuration.operationTimeout)
        let present = configuration.subscriptions.filter { !database.characteristics($0).isEmpty }
        let wanted = configuration.requireAllSubscriptions ? configuration.subscriptions : present
        guard !wanted.isEmpty else {
            throw .request("the device offers none of " + configuration.subscriptions.map(\.description).joined(separator: ", "))
        }
        for uuid in wanted {
            try await client.subscribe(uuid, into: notificationSink, timeout: configuration.operationTimeout)
        }
        for uuid in configuration.reads {
            guard let characteristic = database.characteristics(uuid).first, characteristic.canRead else { continue }
            let value = try await client.read(uuid, timeout: configuration.operationTimeout)
            notificationSink.yield(GATTNotification(peer: client.peer, characteristic: uuid, valueHandle: characteristic.valueHandle,
                                                    value: value, receivedAt: Date()))
        }
        if let afterSubscribe = configuration.afterSubscribe { try? await afterSubscribe(client, database, notificationSink) }
    }

    private func run() async {
        var failures = 0
        while !stopping, !Task.isCancelled {
            do throws(BLEError) {
                let client = try await runtime.connect(configuration.address, timeout: configuration.connectTimeout)
                self.client = client
                do throws(BLEError) {
                    try await subscribe(client)
                } catch {
                    _ = try? await client.disconnect(timeout: .seconds(3))
                    self.client = nil
                    throw error
                }
                failures = 0
                connections += 1
                eventSink.yield(.ready(connection: connections))
                let reason = try? await client.disconnected(timeout: nil)
                self.client = nil
                eventSink.yield(.disconnected(reason: reason ?? nil))
            } catch {
                eventSink.yield(.attemptFailed(error.description))
                // Final: the runtime is gone or was never started; retrying cannot help.
                if error.isFinal {
                    eventSink.yield(.gaveUp(error))
                    break
                }
            }
            guard !stopping, !Task.isCancelled else { break }
            failures += 1
            let delay = configuration.backoff.delay(attempt: failures, random: random())
            eventSink.yield(.retrying(after: delay))
            do { try await sleep(delay) } catch { break }
        }
    }
}
