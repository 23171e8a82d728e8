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
    guard !hasExited(process) else { return }
    kill(process.processIdentifier, signal)
    let deadline = Date().addingTimeInterval(grace)
    while !hasExited(process) && Date() < deadline { usleep(10_000) }
    if !hasExited(process) { kill(process.processIdentifier, SIGKILL) }
    while !hasExited(process) { usleep(10_000) }
}

/// Whether `process` has ended: Foundation says so, or the kernel does (a zombie, or no such
/// process). Foundation's `isRunning` turns false only once its monitor thread has reaped the
/// child; a CI run had two SIGKILLed servers left as zombies for minutes with `isRunning` still
/// true, and the two cooperative-pool threads waiting for it here held up every other test.
func hasExited(_ process: Process) -> Bool {
    guard process.isRunning else { return true }
    guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return true }
    // `PID (COMM) STATE ...`: the state follows the command's closing parenthesis.
    return stat[close...].dropFirst(2).first == "Z"
}
