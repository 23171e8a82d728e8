import Foundation
import HealthStore
import HealthSync
import Logging
import ServiceLifecycle
import Synchronization

/// Forwards the outbox to the tracking server and pulls the other devices' history: at start,
/// soon after records are stored (``wake()``), and every `intervalS` otherwise. Not logged in
/// (no credentials next to the database): it says so and checks again each interval. On
/// graceful shutdown (which reaches it after the drivers stopped and stored what they held) it
/// makes one last drain of at most `finalDrain`, so that what was recorded just before the stop
/// leaves too; an upload cut short is sent again next time, and the server's upsert makes that
/// harmless.
public final class ForwarderService: Service, Sendable {
    let store: HealthStore
    let settings: ForwarderSettings
    let credentialsDatabase: String
    let state: DaemonState
    let metrics: DaemonMetrics
    let logger: Logger
    /// Set by ``wake()``, cleared when a cycle starts.
    private let woken = Mutex(false)

    public init(store: HealthStore, settings: ForwarderSettings, database: String, state: DaemonState, metrics: DaemonMetrics,
                logger: Logger) {
        self.metrics = metrics
        self.store = store
        self.settings = settings
        credentialsDatabase = database
        self.state = state
        self.logger = logger
    }

    /// Asks for a drain soon (new records were stored).
    public func wake() { woken.withLock { $0 = true } }

    /// The time the last drain at shutdown may take.
    public var finalDrain: Duration { .seconds(5) }

    public func run() async throws {
        let interval = Duration.milliseconds(Int64(settings.intervalS * 1000))
        let clock = ContinuousClock()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            woken.withLock { $0 = false }
            try? await cancelWhenGracefulShutdown { await self.cycle() }
            // Until the interval is over or records were stored (checked twice a second, which
            // also lets a burst of stored batches gather into one drain); a shutdown ends it.
            let due = clock.now + interval
            while clock.now < due, !woken.withLock({ $0 }), !Task.isCancelled, !Task.isShuttingDownGracefully {
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        guard !Task.isCancelled else { return }
        let limit = finalDrain
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.cycle() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// One drain and pull.
    func cycle() async {
        let credentials: SyncCredentials
        do {
            guard let loaded = try SyncCredentials.load(path: credentialsPath) else {
                await state.synced(forwarded: 0, error: "not logged in: run healthgate login --db \(credentialsDatabase)")
                return
            }
            credentials = loaded
        } catch {
            await state.synced(forwarded: 0, error: "\(error)")
            return
        }
        var configuration = SyncClient.Configuration(server: settings.server)
        configuration.pinnedCAFile = settings.caFile ?? credentials.caFile
        let client: SyncClient
        do { client = try SyncClient(configuration: configuration) } catch {
            await state.synced(forwarded: 0, error: "\(error)")
            return
        }
        var forwarding = Forwarder.Configuration()
        forwarding.maxRecords = settings.batchRecords
        forwarding.maxBytes = settings.batchBytes
        forwarding.concurrentUploads = settings.concurrentUploads
        forwarding.maxConsecutiveFailures = 4  // then wait for the next cycle, with the error in the status
        let forwarder = Forwarder(store: store, client: client, token: credentials.token, configuration: forwarding)
        do {
            let started = ContinuousClock.now
            let report = try await forwarder.drain()
            if settings.pull { _ = try await forwarder.pull() }
            await state.synced(forwarded: report.accepted + report.duplicates, error: nil)
            metrics.forwarded.increment(by: Int64(report.accepted + report.duplicates))
            metrics.forwardSeconds.record(ContinuousClock.now - started)
            if report.uploads > 0 {
                logger.info("forwarded", metadata: ["accepted": "\(report.accepted)", "duplicates": "\(report.duplicates)",
                                                    "rejected": "\(report.rejected)", "remaining": "\(report.remaining)",
                                                    "seconds": "\((ContinuousClock.now - started).components.seconds)"])
            }
        } catch is CancellationError {
        } catch {
            logger.warning("forwarding failed", metadata: ["error": "\(error)"])
            metrics.error("forward")
            await state.synced(forwarded: 0, error: "\(error)")
        }
        await client.shutdown()
        if let depth = try? store.outboxDepth() { metrics.outboxDepth.set(Double(depth)) }
    }

    private var credentialsPath: String {
        settings.credentials ?? SyncCredentials.path(forDatabase: credentialsDatabase)
    }
}
