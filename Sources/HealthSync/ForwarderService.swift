public import Foundation
public import HealthStore
public import Logging
public import ServiceLifecycle
import Timing

/// Forwards the outbox to the tracking server and pulls the other devices' history: at start,
/// soon after records are stored (``wake()``), and every `intervalS` otherwise. Not logged in
/// (no credentials next to the database): it says so and checks again each interval. On
/// graceful shutdown (which reaches it after the drivers stopped and stored what they held) it
/// makes one last drain of at most `finalDrain`, so that what was recorded just before the stop
/// leaves too; an upload cut short is sent again next time, and the server's upsert makes that
/// harmless. Each cycle's outcome goes to `onCycle` (the daemon's status and metrics).
public final class ForwarderService: Service, Sendable {
    let store: HealthStore
    let settings: ForwarderSettings
    let credentialsDatabase: String
    let logger: Logger
    /// Told what each cycle did, once the cycle is over.
    let onCycle: @Sendable (ForwarderCycle) async -> Void
    /// Rung by ``wake()``; the run loop waits on it between cycles.
    private let doorbell = Doorbell()

    /// `database`: the database whose credentials file is used unless `settings` names one.
    public init(store: HealthStore, settings: ForwarderSettings, database: String, logger: Logger,
                onCycle: @escaping @Sendable (ForwarderCycle) async -> Void = { _ in }) {
        self.store = store
        self.settings = settings
        credentialsDatabase = database
        self.logger = logger
        self.onCycle = onCycle
    }

    /// Asks for a drain soon (new records were stored).
    public func wake() { doorbell.ring() }

    /// The time the last drain at shutdown may take.
    public var finalDrain: Duration { .seconds(5) }

    public func run() async throws {
        let interval = Duration.clamped(seconds: settings.intervalS, maximum: .seconds(86_400))
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            doorbell.reset()  // what was stored until now, this cycle takes
            let serverWait = await cancelWhenGracefulShutdown { await self.cycle() }.serverWait
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

    /// One drain and pull, reported to `onCycle`; the outcome holds the wait the server asked for
    /// when it asked for more than a drain waits on its own.
    @discardableResult
    func cycle() async -> ForwarderCycle {
        let outcome = await drainAndPull()
        await onCycle(outcome)
        return outcome
    }

    private func drainAndPull() async -> ForwarderCycle {
        let credentials: SyncCredentials
        do {
            guard let loaded = try SyncCredentials.load(path: credentialsPath) else {
                return ForwarderCycle(result: .notStarted("not logged in: run healthgate login --db \(credentialsDatabase)"))
            }
            credentials = loaded
        } catch {
            return ForwarderCycle(result: .notStarted("\(error)"))
        }
        var configuration = SyncClient.Configuration(server: settings.server)
        configuration.pinnedCAFile = settings.caFile ?? credentials.caFile
        let client: SyncClient
        do { client = try SyncClient(configuration: configuration) } catch {
            return ForwarderCycle(result: .notStarted("\(error)"))
        }
        var forwarding = Forwarder.Configuration()
        forwarding.maxRecords = settings.batchRecords
        forwarding.maxBytes = settings.batchBytes
        forwarding.concurrentUploads = settings.concurrentUploads
        forwarding.maxConsecutiveFailures = 4  // then wait for the next cycle, with the error in the status
        let forwarder = Forwarder(store: store, client: client, token: credentials.token, deviceId: credentials.deviceId,
                                  configuration: forwarding)
        var result = ForwarderCycle.Result.cancelled
        var serverWait: Duration?
        do {
            let started = ContinuousClock.now
            let report = try await forwarder.drain()
            let pull = settings.pull ? try await forwarder.pull() : nil
            let problem = report.heldBack > 0 ? "\(report.heldBack) record(s) held back: \(report.heldBackReason ?? "")" : nil
            result = .forwarded(records: report.accepted + report.duplicates, problem: problem, duration: ContinuousClock.now - started)
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
            result = .failed("\(error)")
            if let error = error as? SyncError, case .transient(_, let wait?) = error { serverWait = wait }
        }
        await client.shutdown()
        return ForwarderCycle(result: result, outboxDepth: try? await store.outboxDepth(), serverWait: serverWait)
    }

    private var credentialsPath: String {
        settings.credentials ?? SyncCredentials.path(forDatabase: credentialsDatabase)
    }
}

/// What one forwarding cycle did, for whoever keeps the status and the metrics.
public struct ForwarderCycle: Sendable, Equatable {
    public enum Result: Sendable, Equatable {
        /// Drained (and pulled): `records` acknowledged by the server (accepted or duplicates);
        /// `problem` says why some were held back. `duration`: the drain and the pull.
        case forwarded(records: Int, problem: String?, duration: Duration)
        /// Did not reach the server: not logged in, unreadable credentials, an unusable client
        /// configuration.
        case notStarted(String)
        /// The drain or the pull failed.
        case failed(String)
        /// Stopped by a shutdown partway.
        case cancelled
    }

    public var result: Result
    /// The outbox depth after the cycle (nil: not read, or the cycle did not start).
    public var outboxDepth: Int?
    /// The wait the server asked for (Retry-After), if it asked.
    public var serverWait: Duration?

    public init(result: Result, outboxDepth: Int? = nil, serverWait: Duration? = nil) {
        self.result = result
        self.outboxDepth = outboxDepth
        self.serverWait = serverWait
    }
}

/// The forwarder's settings (the daemon's `[forwarder]` table).
public struct ForwarderSettings: Sendable, Equatable {
    /// The tracking server's base URL (http or https).
    public var server: URL
    /// The device token file written by `healthgate login` (default: next to the database).
    public var credentials: String?
    /// A CA certificate (PEM) to trust instead of the system store.
    public var caFile: String?
    /// Seconds between drains when nothing new was stored.
    public var intervalS = 60.0
    public var batchRecords = 1000
    public var batchBytes = 8 << 20
    public var concurrentUploads = Forwarder.Configuration().concurrentUploads
    /// Pull the other devices' history after each drain.
    public var pull = true

    public init(server: URL) { self.server = server }
}
