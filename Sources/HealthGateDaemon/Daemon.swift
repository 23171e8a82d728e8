import Dashboard
public import DriverKit
import Foundation
import HealthModel
import HealthPipeline
import HealthStore
import HealthSync
public import LinuxAdapters
public import Logging
import Entries
import ServiceLifecycle
import MetricsEndpoint
import UnixSignals

/// `healthgate daemon`: the drivers, the forwarder and the status socket as services of one
/// `ServiceGroup`. The database is opened (and migrated) before anything starts; SIGTERM and
/// SIGINT stop everything in order (each driver stores what it holds); SIGHUP reloads the
/// configuration file, adding, removing and restarting drivers without a restart.
public enum Daemon {
    public struct Options: Sendable {
        /// The TOML file (nil: the embedded default for `stateDirectory`).
        public var configPath: String?
        public var stateDirectory: String
        /// The drivers the configuration may name (the registry's catalog).
        public var drivers: DriverCatalog

        public init(configPath: String?, stateDirectory: String, drivers: DriverCatalog) {
            self.configPath = configPath
            self.stateDirectory = stateDirectory
            self.drivers = drivers
        }

        /// The configuration file's contents, or the embedded default.
        public func load() throws(ConfigError) -> DaemonConfig {
            guard let configPath else { return .embeddedDefault(stateDirectory: stateDirectory) }
            return try DaemonConfig.load(path: configPath, stateDirectory: stateDirectory, drivers: drivers)
        }
    }

    /// Runs `config` (loaded from `options`) until SIGTERM or SIGINT. Throws before starting
    /// anything when the database is unusable or a driver refuses its table.
    public static func run(_ config: DaemonConfig, options: Options, logger: Logger,
                           notifier: SystemdNotifier = SystemdNotifier()) async throws {
        // No state directory is made here: each path the configuration names gets its folder
        // (0700) from what uses it, so a configuration that names every path leaves no stray
        // ./healthgate-state behind.
        let store: HealthStore
        do { store = try await HealthStore(path: config.database) } catch {
            throw ConfigError(keyPath: "database", reason: "cannot open \(config.database): \(error)")
        }
        let interrupted = try await store.completeInterruptedWorkouts()
        if !interrupted.isEmpty { logger.notice("completed workouts a previous run left open", metadata: ["count": "\(interrupted.count)"]) }

        let state = DaemonState(database: config.database, server: config.forwarder?.server.absoluteString)
        let metrics = DaemonMetrics()
        metrics.outboxDepth.set(Double(try await store.outboxDepth()))
        let forwarder = config.forwarder.map {
            ForwarderService(store: store, settings: $0, database: config.database, logger: logger,
                             onCycle: { cycle in await record(cycle, state: state, metrics: metrics) })
        }
        let events = DriverEvents(state: state, metrics: metrics)
        let importers = try options.drivers.makeFileImporters(
            settings: config.importers, disabled: config.disabledImporters,
            context: { DriverContext(instance: $0, logger: logger) })
        let factory = DriverFactory(catalog: options.drivers, store: store, pipeline: ImportPipeline(store: store, importers: importers),
                                    stateDirectory: options.stateDirectory,
                                    state: state, metrics: metrics, events: events, logger: logger,
                                    onStored: { forwarder?.wake() })
        let supervisor = DriverSupervisor(state: state, logger: logger, onRestart: { metrics.error("driver_restart") })
        try await supervisor.apply(config.drivers, make: factory.make)

        // Events first: the group stops services in reverse order, so it drains what the drivers
        // reported after they stopped.
        var services: [any Service] = [events]
        if let forwarder { services.append(forwarder) }
        if let socket = config.statusSocket {
            // Entries logged through the socket count under the `manual` source and wake the forwarder.
            services.append(StatusServer(path: socket, state: state, store: store, logger: logger, onStored: { count in
                metrics.stored(count, driver: EntryBuilder.driverID)
                forwarder?.wake()
            }))
        }
        if let address = config.metricsAddress { services.append(MetricsServer(address: address, logger: logger, exposition: metrics.exposition)) }
        if let address = config.dashboardAddress,
           case .success(let listen) = DashboardListen.parse(address, secured: config.dashboardAccess.secured) {
            let access = try await config.dashboardAccess.load()
            let status: @Sendable () async -> DashboardStatus = {
                let now = await state.current()
                return DashboardStatus(drivers: now.drivers.map { DashboardStatus.Driver(name: $0.name, type: $0.type, state: $0.state.rawValue,
                                                                                         devices: $0.devices, detail: $0.detail) },
                                       lastSyncAt: now.lastSyncAt, lastSyncError: now.lastSyncError, server: now.server)
            }
            services.append(DashboardServer.application(store: store, listen: listen, access: access, status: status, onStored: { count in
                metrics.stored(count, driver: EntryBuilder.driverID)
                forwarder?.wake()
            }, onListening: { url in
                logger.info("dashboard", metadata: ["url": "\(url)"])
            }, logger: logger))
        }
        services.append(DaemonControl(options: options, running: config, supervisor: supervisor, factory: factory,
                                      state: state, notifier: notifier, logger: logger))
        // The drivers last: stopped first at shutdown, each storing what it has while the
        // forwarder, the socket and the events still run.
        services.append(supervisor)
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                      logger: logger))
        for notice in config.notices { logger.warning("configuration: \(notice)") }
        logger.info("started", metadata: ["database": "\(config.database)", "drivers": "\(config.drivers.keys.sorted())",
                                          "server": "\(config.forwarder?.server.absoluteString ?? "none")"])
        try await group.run()
        logger.info("stopped")
    }

    /// What a forwarding cycle did, into the status and the metrics.
    static func record(_ cycle: ForwarderCycle, state: DaemonState, metrics: DaemonMetrics) async {
        switch cycle.result {
        case .forwarded(let records, let problem, let duration):
            await state.synced(forwarded: records, error: problem)
            metrics.forwarded.increment(by: Int64(records))
            metrics.forwardSeconds.record(duration)
        case .notStarted(let reason):
            await state.synced(forwarded: 0, error: reason)
        case .failed(let error):
            metrics.error("forward")
            await state.synced(forwarded: 0, error: error)
        case .cancelled:
            break
        }
        if let depth = cycle.outboxDepth { metrics.outboxDepth.set(Double(depth)) }
    }
}

/// Readiness, the watchdog and SIGHUP reloads (the drivers' supervisor is a service of its own).
final class DaemonControl: Service, Sendable {
    let options: Daemon.Options
    let running: DaemonConfig
    let supervisor: DriverSupervisor
    let factory: DriverFactory
    let state: DaemonState
    let notifier: SystemdNotifier
    let logger: Logger

    init(options: Daemon.Options, running: DaemonConfig, supervisor: DriverSupervisor, factory: DriverFactory,
         state: DaemonState, notifier: SystemdNotifier, logger: Logger) {
        self.options = options
        self.running = running
        self.supervisor = supervisor
        self.factory = factory
        self.state = state
        self.notifier = notifier
        self.logger = logger
    }

    func run() async throws {
        // SIGHUP is trapped before READY: until then its default action would end the process.
        let hangUps = await UnixSignalsSequence(trapping: .sighup)
        // Ready once the drivers run and those that announce it are set up (a file dropped into
        // a watched folder right after READY is seen being written). One that takes longer than
        // ten seconds is named in the log, and READY goes out without it.
        await supervisor.started()
        let announcing = Set(running.drivers.values.filter { options.drivers[$0.type]?.announcesReady == true }.map(\.name))
        let late = await state.waitUntilReady(announcing, upTo: .seconds(10))
        if !late.isEmpty { logger.warning("drivers not set up after 10 s; ready without them", metadata: ["drivers": "\(late.sorted())"]) }
        notifier.ready(status: await state.statusLine())
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.reload(on: hangUps) }
            if let interval = notifier.watchdogInterval {
                group.addTask { await self.pingWatchdog(every: interval) }
            }
            group.addTask { await self.releaseStartupMemory() }
            try? await gracefulShutdown()
            notifier.stopping(status: "stopping")
            group.cancelAll()
        }
    }

    /// Once the drivers have made their first pass (a few seconds after READY), gives back the
    /// pages start-up touched (``MemoryTrim``) and logs the resident set before and after.
    private func releaseStartupMemory() async {
        guard (try? await Task.sleep(for: .seconds(3))) != nil else { return }
        let before = MemoryTrim.residentBytes()
        let advised = MemoryTrim.releaseFileBackedPages()
        let after = MemoryTrim.residentBytes()
        func mb(_ bytes: Int?) -> String { bytes.map { String(format: "%.1f", Double($0) / 1_048_576) } ?? "?" }
        logger.info("released start-up pages", metadata: ["rss_before_mb": "\(mb(before))", "rss_after_mb": "\(mb(after))",
                                                          "mappings": "\(advised)"])
    }

    private func pingWatchdog(every interval: Duration) async {
        while !Task.isCancelled {
            notifier.watchdog()
            notifier.status(await state.statusLine())
            try? await Task.sleep(for: interval)
        }
    }

    private func reload(on signals: UnixSignalsSequence) async {
        var current = running
        for await _ in signals {
            notifier.reloading()
            logger.info("reloading the configuration")
            do {
                let next = try options.load()
                for (key, changed) in [("database", next.database != current.database), ("forwarder", next.forwarder != current.forwarder),
                                       ("api", next.statusSocket != current.statusSocket || next.metricsAddress != current.metricsAddress),
                                       ("dashboard", next.dashboardAddress != current.dashboardAddress || next.dashboardAccess != current.dashboardAccess)]
                where changed {
                    logger.warning("a changed [\(key)] takes effect at the next restart")
                }
                try await supervisor.apply(next.drivers, make: factory.make)
                current.drivers = next.drivers
                logger.info("configuration reloaded", metadata: ["drivers": "\(next.drivers.keys.sorted())"])
            } catch {
                logger.error("configuration not reloaded, still running the previous one", metadata: ["error": "\(error)"])
            }
            notifier.ready(status: await state.statusLine())
        }
    }
}

/// Makes a runnable driver from its table through the driver's descriptor: nothing here names a
/// concrete driver.
struct DriverFactory: Sendable {
    let catalog: DriverCatalog
    let store: HealthStore
    /// Where drivers that find files hand them.
    let pipeline: ImportPipeline
    /// The state directory drivers may keep files in (``DriverContext/stateDirectory``).
    let stateDirectory: String
    let state: DaemonState
    let metrics: DaemonMetrics
    let events: DriverEvents
    let logger: Logger
    /// Called after a driver's records were stored (wakes the forwarder).
    let onStored: @Sendable () -> Void

    func make(_ instance: DriverInstance) throws(ConfigError) -> DriverRun {
        guard let descriptor = catalog[instance.type] else {
            throw ConfigError(keyPath: instance.keyPath + ".type", reason: "'\(instance.type)' is not a driver")
        }
        let name = instance.name
        let files = ReportingFileSink(base: pipeline, driver: name, report: { report, driver in await self.imported(report, by: driver) })
        let context = DriverContext(instance: name, logger: logger, files: files, stateDirectory: stateDirectory,
                                    events: events.reporter(for: name))
        let driver: any DeviceDriver
        do { driver = try descriptor.makeDeviceDriver(instance.settings, context: context) } catch {
            throw error.under(instance.keyPath)
        }
        let (metrics, onStored) = (self.metrics, self.onStored)
        let sink = NotifyingSink(base: StoreSink(store: store), onStored: { count in
            metrics.stored(count, driver: name)
            onStored()
        })
        return DriverRun(restart: driver.restartPolicy) { try await driver.run(into: sink) }
    }
}

extension DriverFactory {
    /// Reports a file a driver handed in: log, status, metrics, and the forwarder's wake-up.
    /// Files the ledger already knew are logged at debug level only (a watch holds hundreds,
    /// found again at every plug-in).
    func imported(_ report: FileReport, by driver: String) async {
        var metadata: Logger.Metadata = ["driver": "\(driver)", "path": "\(report.path)", "status": "\(report.status.rawValue)",
                                         "records": "\(report.records)"]
        if let error = report.error { metadata["error"] = "\(error)" }
        if report.status == .failed {
            logger.error("import failed", metadata: metadata)
            metrics.error("import")
        } else if report.status == .alreadyImported {
            logger.debug("already imported", metadata: metadata)
            return
        } else {
            logger.info("imported", metadata: metadata)
        }
        await state.imported(DaemonState.ImportEvent(driver: driver, path: report.path, status: report.status.rawValue,
                                                     records: report.records, at: ISO8601.string(Date())))
        if report.records > 0 {
            metrics.stored(report.records, driver: driver)
            onStored()
        }
    }
}

/// Stores through `base`, then says how many records that was (workout pieces count when they
/// complete a workout).
struct NotifyingSink: RecordSink {
    let base: StoreSink
    let onStored: @Sendable (Int) -> Void

    func emit(_ batch: [HealthRecord]) async throws {
        try await base.emit(batch)
        onStored(batch.count)
    }

    func emit(_ batch: LiveBatch) async throws {
        try await base.emit(batch)
        let count = batch.records.count + batch.workouts.filter(\.isFinal).count
        if count > 0 { onStored(count) }
    }

    func checkpoint(_ key: CheckpointKey) async throws -> String? {
        try await base.checkpoint(key)
    }
}

/// The file sink of one driver instance: imports through the pipeline, then reports the file.
struct ReportingFileSink: FileSink {
    let base: ImportPipeline
    let driver: String
    let report: @Sendable (FileReport, String) async -> Void

    func importFile(_ path: String, checkpoints: [CheckpointKey: String]) async -> FileReport {
        let outcome = await base.importFile(path, checkpoints: checkpoints)
        await report(outcome, driver)
        return outcome
    }
}

/// The one owner of what drivers report besides records: reads their events in the order they
/// were reported (one stream for all drivers) and keeps the status API's connected devices and
/// the metrics. A disconnect cannot overtake its connect.
final class DriverEvents: Service, Sendable {
    private let stream: AsyncStream<(driver: String, event: DriverEvent)>
    private let continuation: AsyncStream<(driver: String, event: DriverEvent)>.Continuation
    private let state: DaemonState
    private let metrics: DaemonMetrics

    init(state: DaemonState, metrics: DaemonMetrics) {
        (stream, continuation) = AsyncStream.makeStream()
        self.state = state
        self.metrics = metrics
    }

    /// What a driver instance's context reports through.
    func reporter(for driver: String) -> @Sendable (DriverEvent) -> Void {
        let continuation = self.continuation
        return { event in continuation.yield((driver, event)) }
    }

    func run() async {
        await withGracefulShutdownHandler {
            for await (driver, event) in stream { await handle(event, from: driver) }
        } onGracefulShutdown: {
            // The drivers have stopped (their service stops first): what they reported is drained.
            self.continuation.finish()
        }
    }

    func handle(_ event: DriverEvent, from driver: String) async {
        switch event {
        case .connected(let device, _):
            metrics.devicesConnected(await state.device(device, of: driver, connected: true), driver: driver)
        case .disconnected(let device):
            metrics.devicesConnected(await state.device(device, of: driver, connected: false), driver: driver)
        case .problem(let kind, _):
            metrics.error(kind)
        case .waiting(let reason):
            await state.driver(driver, waiting: reason)
        case .ready:
            await state.driverReady(driver)
        }
    }
}
