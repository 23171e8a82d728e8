import BLEDriver
import ExecDriver
import DriverKit
import Foundation
import HealthModel
import HealthStore
import Logging
import ServiceLifecycle
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

        public init(configPath: String?, stateDirectory: String) {
            self.configPath = configPath
            self.stateDirectory = stateDirectory
        }

        /// The configuration file's contents, or the embedded default.
        public func load() throws(ConfigError) -> DaemonConfig {
            guard let configPath else { return .embeddedDefault(stateDirectory: stateDirectory) }
            return try DaemonConfig.load(path: configPath, stateDirectory: stateDirectory)
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
            ForwarderService(store: store, settings: $0, database: config.database, state: state, metrics: metrics, logger: logger)
        }
        let factory = DriverFactory(store: store, state: state, metrics: metrics, logger: logger, onStored: { forwarder?.wake() })
        let supervisor = DriverSupervisor(state: state, logger: logger, onRestart: { metrics.error("driver_restart") })
        try await supervisor.apply(config.drivers, make: factory.make)

        var services: [any Service] = []
        if let forwarder { services.append(forwarder) }
        if let socket = config.statusSocket { services.append(StatusServer(path: socket, state: state, logger: logger)) }
        if let address = config.metricsAddress { services.append(MetricsServer(address: address, metrics: metrics, logger: logger)) }
        services.append(DaemonControl(options: options, running: config, supervisor: supervisor, factory: factory,
                                      state: state, notifier: notifier, logger: logger))
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                      logger: logger))
        logger.info("started", metadata: ["database": "\(config.database)", "drivers": "\(config.drivers.keys.sorted())",
                                          "server": "\(config.forwarder?.server.absoluteString ?? "none")"])
        try await group.run()
        logger.info("stopped")
    }
}

/// Readiness, the watchdog, SIGHUP reloads and the orderly stop of the drivers.
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
        notifier.ready(status: await state.statusLine())
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.reload(on: hangUps) }
            if let interval = notifier.watchdogInterval {
                group.addTask { await self.pingWatchdog(every: interval) }
            }
            group.addTask { await self.releaseStartupMemory() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        notifier.stopping(status: "stopping drivers")
        await supervisor.stopAll()
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
                                       ("api", next.statusSocket != current.statusSocket || next.metricsAddress != current.metricsAddress)]
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

/// Makes a runnable driver of each kind from its table.
struct DriverFactory: Sendable {
    let store: HealthStore
    let state: DaemonState
    let metrics: DaemonMetrics
    let logger: Logger
    /// Called after a driver's records were stored (wakes the forwarder).
    let onStored: @Sendable () -> Void

    func make(_ instance: DriverInstance) throws(ConfigError) -> DriverRun {
        let keyPath = "drivers.\(instance.name)"
        switch instance.type {
        case .ble:
            var configuration: BLERecorder.Configuration
            do { configuration = try BLERecorder(config: instance.config).configuration } catch {
                throw ConfigError(keyPath: keyPath, reason: "\(error)")
            }
            let (logger, metrics, state, name) = (self.logger, self.metrics, self.state, instance.name)
            configuration.onEvent = { event in
                switch event {
                case .connected(let address, _):
                    metrics.bleConnection(+1, driver: name)
                    Task { await state.device(address.text, of: name, connected: true) }
                case .disconnected(let address, _):
                    metrics.bleConnection(-1, driver: name)
                    Task { await state.device(address.text, of: name, connected: false) }
                case .malformed: metrics.error("ble_malformed")
                default: break
                }
                logger.info("\(event)", metadata: ["driver": "\(name)"])
            }
            let driver = BLERecorder(configuration: configuration)
            let sink = NotifyingSink(base: StoreSink(store: store), onStored: { count in
                metrics.stored(count, driver: name)
                onStored()
            })
            return { try await driver.run(into: sink) }
        case .watchFolder:
            let settings = try WatchFolder.settings(instance.config, keyPath: keyPath)
            let folder = WatchFolder(settings: settings, pipeline: ImportPipeline(store: store),
                                     onImported: { report in await self.imported(report, by: instance.name) })
            return { try await folder.run() }
        case .massStorage:
            let settings = try MassStorage.settings(instance.config, keyPath: keyPath)
            let (logger, name) = (self.logger, instance.name)
            let watch = MassStorage(settings: settings, pipeline: ImportPipeline(store: store),
                                    onImported: { report in await self.imported(report, by: instance.name) },
                                    onProblem: { problem in logger.warning("\(problem)", metadata: ["driver": "\(name)"]) })
            return { try await watch.run() }
        case .exec:
            var table = instance.config
            table.values["instance"] = instance.name
            var configuration: ExecDriver.Configuration
            do { configuration = try ExecDriver(config: table).configuration } catch {
                throw ConfigError(keyPath: keyPath, reason: "\(error)")
            }
            let (logger, metrics, name) = (self.logger, self.metrics, instance.name)
            configuration.onEvent = { event in
                switch event {
                case .badLine:
                    metrics.error("bad_line")
                    logger.warning("\(event)", metadata: ["driver": "\(name)"])
                case .failedToStart, .exited:
                    logger.warning("\(event)", metadata: ["driver": "\(name)"])
                default:
                    logger.info("\(event)", metadata: ["driver": "\(name)"])
                }
            }
            let driver = ExecDriver(configuration: configuration)
            let sink = NotifyingSink(base: StoreSink(store: store), onStored: { count in
                metrics.stored(count, driver: name)
                self.onStored()
            })
            return { try await driver.run(into: sink) }
        }
    }
}

extension DriverFactory {
    /// Reports a file a driver imported: log, status, metrics, and the forwarder's wake-up.
    func imported(_ report: FileReport, by driver: String) async {
        var metadata: Logger.Metadata = ["driver": "\(driver)", "path": "\(report.path)", "status": "\(report.status.rawValue)",
                                         "records": "\(report.records)"]
        if let error = report.error { metadata["error"] = "\(error)" }
        if report.status == .failed {
            logger.error("import failed", metadata: metadata)
            metrics.error("import")
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
}
