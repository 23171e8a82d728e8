public import Foundation

/// Ends a child process from synchronous code (a `deinit`, a `defer`): sends `signal`, gives it
/// up to `grace` seconds to exit, then SIGKILL, and returns once it is gone. It sleeps between
/// checks and never waits without bound.
///
/// A server whose graceful shutdown waits for a connection this test process holds may never
/// exit, and the thread waiting here (a cooperative-pool thread, from a `deinit`) may be the one
/// that would have closed that connection: a CI run hung that way for 12 minutes.
public func end(_ process: ChildProcess, signal: Int32 = SIGTERM, grace: TimeInterval = 5) {
    guard !hasExited(process) else { return }
    kill(process.processIdentifier, signal)
    let deadline = Date().addingTimeInterval(grace)
    while !hasExited(process) && Date() < deadline { usleep(10_000) }
    if !hasExited(process) { kill(process.processIdentifier, SIGKILL) }
    while !hasExited(process) { usleep(10_000) }
}

/// Whether `process` has ended (``ChildProcess/isRunning`` reaps it then).
func hasExited(_ process: ChildProcess) -> Bool { !process.isRunning }
