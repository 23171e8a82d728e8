public import Foundation

/// Ends a child process from synchronous code (a `deinit`, a `defer`): sends `signal`, gives it
/// up to `grace` seconds to exit, then SIGKILL, and returns once it is gone. It sleeps between
/// checks and never waits without bound.
///
/// Foundation's `waitUntilExit` spins a run loop on Linux and never gives up. A server whose
/// graceful shutdown waits for a connection this test process holds then never exits, and the
/// thread spinning in `waitUntilExit` (a cooperative-pool thread, from a `deinit`) may be the one
/// that would have closed that connection: a CI run hung that way for 12 minutes at full CPU.
public func end(_ process: Process, signal: Int32 = SIGTERM, grace: TimeInterval = 5) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, signal)
    let deadline = Date().addingTimeInterval(grace)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    while process.isRunning { usleep(10_000) }
}
