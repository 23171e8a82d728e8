import DriverKit
import DriverRegistry
import Foundation
@testable import HealthGateDaemon
import Logging
import Synchronization
import Testing
import TestSupport
import Timing

/// The supervisor restarts a driver that fails or ends, after delays that double from the
/// initial one up to the maximum, starting over after a healthy run; the other drivers keep
/// running; a stop ends the waiting at once.
@Suite struct DriverSupervisorTests {
    struct Failure: Error {}

    /// What the driver runs did, and the waits the supervisor asked for, in order.
    final class Journal: Sendable {
        let runs = Mutex(0)
        let waits = Mutex<[Duration]>([])
        let all = AsyncStream<Void>.makeStream()
    }

    /// The daemon's restart delays: Timing's one backoff (tested there) from 1 s doubling to
    /// 5 minutes, without jitter.
    @Test func restartDelaysAreOneSecondDoublingToFiveMinutes() {
        let b = DriverSupervisor.restartBackoff
        #expect(b == Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(300), jitter: 0))
        #expect((1...11).map { b.delay(attempt: $0, random: 0.9) }
                == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map { Duration.seconds($0) })
    }

    @Test func restartsWithDoublingDelaysCappedAndResetAfterAHealthyRun() async throws {
        let state = DaemonState(database: "test", server: nil)
        let journal = Journal()
        let backoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(8))
        let restarts = Mutex(0)
        // The supervisor times runs by this clock: run 6 moves it on past `healthyAfter`.
        let start = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        let supervisor = DriverSupervisor(state: state, logger: Logger(label: "test"), backoff: backoff, healthyAfter: .seconds(3),
                                          onRestart: { restarts.withLock { $0 += 1 } },
                                          sleep: { d in journal.waits.withLock { $0.append(d) } },
                                          now: { start + elapsed.withLock { $0 } })
        let service = Task { await supervisor.run() }
        let instance = DriverInstance(name: "flaky", type: "exec", settings: [:])
        try await supervisor.apply(["flaky": instance]) { _ in
            DriverRun {
                let run = journal.runs.withLock { $0 += 1; return $0 }
                // Runs 1-5 fail at once; run 6 stays up past `healthyAfter`, then fails; run 7 fails
                // at once; run 8 stays until stopped.
                switch run {
                case 6:
                    elapsed.withLock { $0 += .seconds(4) }
                    throw Failure()
                case 8:
                    journal.all.continuation.yield()
                    try await Task.sleep(for: .seconds(3600))
                default:
                    throw Failure()
                }
            }
        }
        var iterator = journal.all.stream.makeAsyncIterator()
        _ = await iterator.next()
        #expect(journal.waits.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8),
                                                  .seconds(1), .seconds(2)])
        #expect(restarts.withLock { $0 } == 7)
        let status = await state.current().drivers.first { $0.name == "flaky" }
        #expect(status?.restarts == 7 && status?.state == .running)
        // The supervisor's end stops its drivers.
        service.cancel()
        await service.value
        #expect(await state.current().drivers.first { $0.name == "flaky" }?.state == .stopped)
    }

    /// A driver that ends without an error is restarted too; one stopped while it waits to
    /// restart is not started again.
    @Test func aStopDuringTheWaitEndsIt() async throws {
        let state = DaemonState(database: "test", server: nil)
        let runs = Mutex(0)
        let waiting = AsyncStream<Void>.makeStream()
        let supervisor = DriverSupervisor(state: state, logger: Logger(label: "test"), sleep: { d in
            waiting.continuation.yield()
            try await Task.sleep(for: .seconds(3600))
        })
        let service = Task { await supervisor.run() }
        defer { service.cancel() }
        try await supervisor.apply(["quits": DriverInstance(name: "quits", type: "exec", settings: [:])]) { _ in
            DriverRun { runs.withLock { $0 += 1 } }
        }
        var iterator = waiting.stream.makeAsyncIterator()
        _ = await iterator.next()
        // Removed from the configuration while it waits: stopped, not run again.
        try await supervisor.apply([:]) { _ in DriverRun {} }
        #expect(runs.withLock { $0 } == 1)
        #expect(await state.current().drivers.isEmpty)
        #expect(await supervisor.names.isEmpty)
    }

    /// A driver whose settings choose its restart delays (the exec driver's `restart_delay_s`) is
    /// restarted after those, not the supervisor's; the exec driver's table gives its policy.
    @Test func aDriversOwnRestartPolicyIsUsed() async throws {
        let state = DaemonState(database: "test", server: nil)
        let waits = Mutex<[Duration]>([])
        let fourth = AsyncStream<Void>.makeStream()
        let supervisor = DriverSupervisor(state: state, logger: Logger(label: "test"), sleep: { d in waits.withLock { $0.append(d) } })
        let service = Task { await supervisor.run() }
        let policy = RestartPolicy(backoff: Backoff(initial: .milliseconds(250), multiplier: 2, maximum: .seconds(1)))
        let runs = Mutex(0)
        try await supervisor.apply(["script": DriverInstance(name: "script", type: "exec", settings: [:])]) { _ in
            DriverRun(restart: policy) {
                // Ends three times (a program that exits), then stays until stopped.
                guard runs.withLock({ $0 += 1; return $0 }) > 3 else { return }
                fourth.continuation.yield()
                try await Task.sleep(for: .seconds(3600))
            }
        }
        var iterator = fourth.stream.makeAsyncIterator()
        _ = await iterator.next()
        #expect(waits.withLock { $0 } == [.milliseconds(250), .milliseconds(500), .seconds(1)])
        service.cancel()
        await service.value

        let exec = try #require(Registry.catalog["exec"]).makeDeviceDriver(["command": .array([.string("/bin/true")]), "restart_delay_s": .float(0.5),
                                                          "max_restart_delay_s": .integer(20)], context: .standalone("script"))
        #expect(exec.restartPolicy == RestartPolicy(backoff: Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(20))))
    }

    /// Applying a configuration stops what changed and starts the new version while the others
    /// keep running: a driver that stays is not restarted.
    @Test func aNewConfigurationRestartsOnlyWhatChanged() async throws {
        let state = DaemonState(database: "test", server: nil)
        let supervisor = DriverSupervisor(state: state, logger: Logger(label: "test"))
        let service = Task { await supervisor.run() }
        let starts = Mutex<[String]>([]), stops = Mutex<[String]>([])
        let make: @Sendable (DriverInstance) throws(ConfigError) -> DriverRun = { instance in
            let label = "\(instance.name):\(instance.settings["v"].map { "\($0)" } ?? "")"
            return DriverRun {
                starts.withLock { $0.append(label) }
                do { try await Task.sleep(for: .seconds(3600)) } catch { stops.withLock { $0.append(label) } }
            }
        }
        let a = DriverInstance(name: "a", type: "exec", settings: ["v": .integer(1)])
        let b1 = DriverInstance(name: "b", type: "exec", settings: ["v": .integer(1)])
        let b2 = DriverInstance(name: "b", type: "exec", settings: ["v": .integer(2)])
        try await supervisor.apply(["a": a, "b": b1], make: make)
        try await eventually("both run") { starts.withLock { $0.count } == 2 }
        try await supervisor.apply(["a": a, "b": b2], make: make)
        try await eventually("b runs again") { starts.withLock { $0.count } == 3 }
        #expect(stops.withLock { $0 } == ["b:integer(1)"])
        #expect(starts.withLock { $0 }.sorted() == ["a:integer(1)", "b:integer(1)", "b:integer(2)"])
        service.cancel()
        await service.value
        #expect(stops.withLock { $0 }.sorted() == ["a:integer(1)", "b:integer(1)", "b:integer(2)"])
    }

    /// READY waits for the drivers that announce readiness: those set up in time are not named,
    /// one that never reports is named once the limit passes.
    @Test func readinessIsWaitedForUpToItsLimit() async throws {
        let state = DaemonState(database: "test", server: nil)
        let waiting = Task { await state.waitUntilReady(["inbox", "usb"], upTo: .seconds(600)) }
        await state.driverReady("inbox")
        await state.driverReady("usb")
        #expect(await waiting.value.isEmpty)
        #expect(await state.waitUntilReady(["inbox", "never"], upTo: .milliseconds(50)) == ["never"])
        #expect(DriverSupervisorTests.watchFolderAnnounces)
    }

    static let watchFolderAnnounces = Registry.catalog["watch_folder"]?.announcesReady == true && Registry.catalog["exec"]?.announcesReady == false
}
