public import DriverKit
import Foundation
public import Logging
public import Timing

/// A driver instance ready to run: runs until cancelled (then stops in order, storing what it
/// has) or until it fails.
public typealias DriverRun = @Sendable () async throws -> Void

/// Runs the configured driver instances, each in a task of its own, restarting one that fails
/// or ends with exponential backoff while the others keep running; applies a new configuration
/// by stopping removed and changed instances and starting new and changed ones.
public actor DriverSupervisor {
    /// Restart delays: from 1 s doubling up to 5 minutes, without jitter.
    public static let restartBackoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(300))

    private struct Running {
        var instance: DriverInstance
        var task: Task<Void, Never>
    }

    private var running: [String: Running] = [:]
    private let state: DaemonState
    private let logger: Logger
    private let backoff: Backoff
    /// A run at least this long starts the delays over.
    private let healthyAfter: Duration
    private let onRestart: @Sendable () -> Void
    private let sleep: @Sendable (Duration) async throws -> Void

    /// `sleep` waits between a driver's end and its restart (tests pass one that records).
    public init(state: DaemonState, logger: Logger, backoff: Backoff = DriverSupervisor.restartBackoff,
                healthyAfter: Duration = .seconds(60), onRestart: @escaping @Sendable () -> Void = {},
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) {
        self.state = state
        self.logger = logger
        self.backoff = backoff
        self.healthyAfter = healthyAfter
        self.onRestart = onRestart
        self.sleep = sleep
    }

    /// Names of the instances running now.
    public var names: [String] { running.keys.sorted() }

    /// Makes every instance's runner first (so that a configuration a driver refuses changes
    /// nothing), then stops what was removed or changed and starts what is new or changed.
    public func apply(_ instances: [String: DriverInstance],
                      make: (DriverInstance) throws(ConfigError) -> DriverRun) async throws(ConfigError) {
        var runners: [String: DriverRun] = [:]
        for (name, instance) in instances where running[name]?.instance != instance {
            runners[name] = try make(instance)
        }
        for (name, current) in running where instances[name] != current.instance {
            await stop(name)
            if instances[name] == nil { await state.removeDriver(name) }
        }
        for (name, run) in runners.sorted(by: { $0.key < $1.key }) {
            start(instances[name]!, run)
        }
    }

    /// Stops every instance (each stores what it has first) and waits for them.
    public func stopAll() async {
        for name in running.keys.sorted() { await stop(name) }
    }

    private func stop(_ name: String) async {
        guard let current = running.removeValue(forKey: name) else { return }
        logger.info("stopping driver", metadata: ["driver": "\(name)"])
        current.task.cancel()
        await current.task.value
    }

    private func start(_ instance: DriverInstance, _ run: @escaping DriverRun) {
        let (state, logger, backoff, healthyAfter, onRestart, sleep) = (self.state, self.logger, self.backoff, self.healthyAfter,
                                                                        self.onRestart, self.sleep)
        let name = instance.name, type = instance.type
        logger.info("starting driver", metadata: ["driver": "\(name)", "type": "\(type)"])
        let task = Task {
            var attempt = 1
            var restarted = false
            while !Task.isCancelled {
                await state.driver(name, type: type, .running, restarted: restarted)
                let clock = ContinuousClock()
                let started = clock.now
                var detail = "ended"
                do {
                    try await run()
                } catch is CancellationError {
                    break
                } catch {
                    detail = "\(error)"
                }
                if Task.isCancelled { break }
                if clock.now - started >= healthyAfter { attempt = 1 }
                let delay = backoff.delay(attempt: attempt, random: 0.5)
                logger.error("driver stopped; restarting", metadata: ["driver": "\(name)", "error": "\(detail)",
                                                                      "after_s": "\(delay.components.seconds)"])
                await state.driver(name, type: type, .restarting, detail: detail)
                onRestart()
                do { try await sleep(delay) } catch { break }
                if Task.isCancelled { break }
                attempt += 1
                restarted = true
            }
            await state.driver(name, type: type, .stopped)
        }
        running[instance.name] = Running(instance: instance, task: task)
    }
}
