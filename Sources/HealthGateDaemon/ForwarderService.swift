import Foundation
import HealthStore
import HealthSync
import Logging
import ServiceLifecycle
import Timing

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
    /// Rung by ``wake()``; the run loop waits on it between cycles.
    private let doorbell = Doorbell()

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
    public func wake() { doorbell.ring() }

    /// The time the last drain at shutdown may take.
    public var finalDrain: Duration { .seconds(5) }

    public func run() async throws {
        let interval = Duration.clamped(seconds: settings.intervalS, maximum: .seconds(86_400))
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            doorbell.reset()  // what was stored until now, this cycle takes
            let serverWait = await cancelWhenGracefulShutdown { await self.cycle() }
            if let serverWait, serverWait > interval {
                // The server asked for a longer pause than the interval (Retry-After, at most an
                // hour): keep away until then, whatever gets stored meanwhile.
                logger.notice("the server asked to wait before the next sync", metadata: ["seconds": "\(Int(serverWait.inSeconds))"])
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: serverWait) }
                continue
            }
            // Until the interval is over or records were stored, then half a second more so that
            // a burst of stored batches leaves in one drain; a shutdown ends the wait.
            try? await cancelWhenGracefulShutdown {
                if await self.doorbell.wait(upTo: interval) { try await Task.sleep(for: .milliseconds(500)) }
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

    /// One drain and pull; answers the wait the server asked for when it asked for more than a
    /// drain waits on its own.
    @discardableResult
    func cycle() async -> Duration? {
        let credentials: SyncCredentials
        do {
            guard let loaded = try SyncCredentials.load(path: credentialsPath) else {
                await state.synced(forwarded: 0, error: "not logged in: run healthgate login --db \(credentialsDatabase)")
                return nil
            }
            credentials = loaded
        } catch {
            await state.synced(forwarded: 0, error: "\(error)")
            return nil
        }
        var configuration = SyncClient.Configuration(server: settings.server)
        configuration.pinnedCAFile = settings.caFile ?? credentials.caFile
        let client: SyncClient
        do { client = try SyncClient(configuration: configuration) } catch {
            await state.synced(forwarded: 0, error: "\(error)")
            return nil
        }
        var forwarding = Forwarder.Configuration()
        forwarding.maxRecords = settings.batchRecords
        forwarding.maxBytes = settings.batchBytes
        forwarding.concurrentUploads = settings.concurrentUploads
        forwarding.maxConsecutiveFailures = 4  // then wait for the next cycle, with the error in the status
        let forwarder = Forwarder(store: store, client: client, token: credentials.token, configuration: forwarding)
        var serverWait: Duration?
        do {
            let started = ContinuousClock.now
            let report = try await forwarder.drain()
            let pull = settings.pull ? try await forwarder.pull() : nil
            let problem = report.heldBack > 0 ? "\(report.heldBack) record(s) held back: \(report.heldBackReason ?? "")" : nil
            await state.synced(forwarded: report.accepted + report.duplicates, error: problem)
            metrics.forwarded.increment(by: Int64(report.accepted + report.duplicates))
            metrics.forwardSeconds.record(ContinuousClock.now - started)
            if report.uploads > 0 || report.deadLettered > 0 {
                logger.info("forwarded", metadata: ["accepted": "\(report.accepted)", "duplicates": "\(report.duplicates)",
                                                    "rejected": "\(report.rejected)", "unreadable": "\(report.unreadable)",
                                                    "held_back": "\(report.heldBack)", "remaining": "\(report.remaining)",
                                                    "seconds": "\((ContinuousClock.now - started).components.seconds)"])
            }
            if let pull, pull.held > 0 || pull.released > 0 {
                logger.warning("pulled records held aside", metadata: ["held": "\(pull.held)", "released": "\(pull.released)",
                                                                       "still_held": "\(pull.stillHeld)"])
            }
        } catch is CancellationError {
        } catch {
            logger.warning("forwarding failed", metadata: ["error": "\(error)"])
            metrics.error("forward")
            await state.synced(forwarded: 0, error: "\(error)")
            if let error = error as? SyncError, case .transient(_, let wait?) = error { serverWait = wait }
        }
        await client.shutdown()
        if let depth = try? await store.outboxDepth() { metrics.outboxDepth.set(Double(depth)) }
        return serverWait
    }

    private var credentialsPath: String {
        settings.credentials ?? SyncCredentials.path(forDatabase: credentialsDatabase)
    }
}
