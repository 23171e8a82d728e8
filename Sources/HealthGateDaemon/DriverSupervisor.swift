public import DriverKit
import Foundation
public import Logging
public import ServiceLifecycle
public import Timing

/// A driver instance ready to run: runs until cancelled (then stops in order, storing what it
/// has), until it fails or until its work ends; `restart` is the driver's own restart policy
/// (nil: the supervisor's).
public struct DriverRun: Sendable {
    public var restart: RestartPolicy?
    public var run: @Sendable () async throws -> Void

    public init(restart: RestartPolicy? = nil, _ run: @escaping @Sendable () async throws -> Void) {
        self.restart = restart
        self.run = run
    }
}

/// Runs the configured driver instances as a service: each instance is a child task of the
/// supervisor's task group, restarted with exponential backoff when it fails or ends while the
/// others keep running. ``apply(_:make:)`` applies a configuration (stops removed and changed
/// instances, starts new and changed ones). At graceful shutdown (or cancellation) every
/// instance is stopped, each storing what it has first, and ``run()`` returns once all have.
public actor DriverSupervisor: Service {
    /// Restart delays: from 1 s doubling up to 5 minutes, without jitter.
    public static let restartBackoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(300))

    /// An instance to start: its runner, the bell that stops it and the one it rings once stopped.
    struct Start: Sendable {
        var instance: DriverInstance
        var run: DriverRun
        var stop = Doorbell()
        var stopped = Doorbell()
    }

    private var running: [String: Start] = [:]
    /// Instances handed to ``run()``, and those it has started: ``started()`` waits for these to meet.
    private var handedOver = 0, launched = 0
    private let launches = Doorbell()
    private let starts: AsyncStream<Start>
    private let startsInput: AsyncStream<Start>.Continuation
    private let state: DaemonState
    private let logger: Logger
    private let backoff: Backoff
    /// A run at least this long starts the delays over.
    private let healthyAfter: Duration
    private let onRestart: @Sendable () -> Void
    private let sleep: @Sendable (Duration) async throws -> Void
    private let now: @Sendable () -> ContinuousClock.Instant

    /// `sleep` waits between a driver's end and its restart, `now` times its runs (tests pass
    /// ones that record and that advance when told).
    public init(state: DaemonState, logger: Logger, backoff: Backoff = DriverSupervisor.restartBackoff,
                healthyAfter: Duration = .seconds(60), onRestart: @escaping @Sendable () -> Void = {},
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
                now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.state = state
        self.logger = logger
        self.backoff = backoff
        self.healthyAfter = healthyAfter
        self.onRestart = onRestart
        self.sleep = sleep
        self.now = now
        (starts, startsInput) = AsyncStream<Start>.makeStream()
    }

    /// Names of the instances running now.
    public var names: [String] { running.keys.sorted() }

    /// Runs the instances ``apply(_:make:)`` starts until graceful shutdown, then stops them all.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await start in starts.cancelOnGracefulShutdown() {
                let loop = RestartLoop(state: state, logger: logger, backoff: backoff, healthyAfter: healthyAfter,
                                       onRestart: onRestart, sleep: sleep, now: now)
                group.addTask { await loop.supervise(start) }
                launched += 1
                launches.ring()
            }
            // Shutting down (or cancelled): every instance stops, in name order.
            for name in running.keys.sorted() { await stop(name) }
        }
    }

    /// Returns once ``run()`` has started every instance applied so far (the daemon says it is
    /// ready only then), or when the caller is cancelled.
    public func started() async {
        let target = handedOver
        while launched < target {
            guard await launches.wait() else { return }
        }
    }

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
            let start = Start(instance: instances[name]!, run: run)
            logger.info("starting driver", metadata: ["driver": "\(name)", "type": "\(start.instance.type)"])
            running[name] = start
            handedOver += 1
            startsInput.yield(start)
        }
    }

    /// Stops `name` (it stores what it has first) and waits until it has.
    private func stop(_ name: String) async {
        guard let current = running.removeValue(forKey: name) else { return }
        logger.info("stopping driver", metadata: ["driver": "\(name)"])
        current.stop.ring()
        _ = await current.stopped.wait()
    }
}

/// One instance's life under the supervisor: run, and after an end or a failure wait the
/// backoff's delay and run again, until its stop bell rings or the supervisor is cancelled.
struct RestartLoop: Sendable {
    /// A delay in seconds as the log writes it (`0.25`, `300`).
    static func seconds(_ delay: Duration) -> String { String(format: "%g", delay.inSeconds) }

    let state: DaemonState
    let logger: Logger
    let backoff: Backoff
    let healthyAfter: Duration
    let onRestart: @Sendable () -> Void
    let sleep: @Sendable (Duration) async throws -> Void
    let now: @Sendable () -> ContinuousClock.Instant

    func supervise(_ start: DriverSupervisor.Start) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await restarting(start.instance, start.run) }
            // Rung by a stop, or false at once when the supervisor is cancelled: either way the
            // runs end (cancelled: the driver stores what it has).
            _ = await start.stop.wait()
            group.cancelAll()
        }
        start.stopped.ring()
    }

    private func restarting(_ instance: DriverInstance, _ driver: DriverRun) async {
        let name = instance.name, type = instance.type
        let backoff = driver.restart?.backoff ?? backoff, healthyAfter = driver.restart?.healthyAfter ?? healthyAfter
        var attempt = 1
        var restarted = false
        while !Task.isCancelled {
            await state.driver(name, type: type, .running, restarted: restarted)
            let started = now()
            var detail = "ended"
            var failed = false
            do {
                try await driver.run()
            } catch is CancellationError {
                break
            } catch {
                detail = "\(error)"
                failed = true
            }
            if Task.isCancelled { break }
            if now() - started >= healthyAfter { attempt = 1 }
            let delay = backoff.delay(attempt: attempt, random: 0.5)
            // A failure is an error; an end (the exec driver's program exited) a warning.
            logger.log(level: failed ? .error : .warning, "driver stopped; restarting",
                       metadata: ["driver": "\(name)", "error": "\(detail)", "after_s": "\(Self.seconds(delay))"])
            await state.driver(name, type: type, .restarting, detail: detail)
            onRestart()
            do { try await sleep(delay) } catch { break }
            if Task.isCancelled { break }
            attempt += 1
            restarted = true
        }
        await state.driver(name, type: type, .stopped)
    }
}
