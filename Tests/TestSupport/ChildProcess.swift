public import Foundation
import Synchronization

/// A program the tests start: the suite's one way to run a child process, with the parts of
/// Foundation's `Process` the tests use (standard streams as a `Pipe`, a `FileHandle` or nil for
/// /dev/null; `isRunning`, `terminationStatus`, `waitUntilExit`).
///
/// Not Foundation's `Process`, for three things seen in this suite on Linux:
/// - Swift 6.3.1's `Process.run()` lists /proc/self/fd to close every descriptor in the child,
///   and copies each entry past the end of glibc's directory buffer (fixed upstream after 6.3.1:
///   swift-corelibs-foundation 81eb85a). The suite holds about 1,400 descriptors at its busiest,
///   the buffer ends after 1,365 entries, and a CI run crashed there (SIGSEGV in `memcpy`).
/// - It learns of a child's end through a socket the child inherits, so a daemon the child
///   leaves running (`pg_ctl start`) keeps the wait from ever ending.
/// - Its `isRunning` turns false only once its monitor thread has reaped the child (minutes,
///   under load).
///
/// Here the child gets its standard streams and nothing else (glibc's
/// `posix_spawn_file_actions_addclosefrom_np`), an empty signal mask with default handlers (a
/// test thread may block signals, and a child inheriting that mask ignores being stopped), and a
/// process group of its own, as with Foundation. It is reaped by `waitpid` when asked about.
public final class ChildProcess: @unchecked Sendable {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public var executableURL: URL?
    public var arguments: [String]?
    /// The child's whole environment; nil: this process's.
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    /// A `Pipe`, a `FileHandle`, or nil for /dev/null. Default: this process's own.
    public var standardInput: Any? = FileHandle.standardInput
    public var standardOutput: Any? = FileHandle.standardOutput
    public var standardError: Any? = FileHandle.standardError

    /// The raw `waitpid` status once the child is reaped.
    private let exit = Mutex<Int32?>(nil)
    public private(set) var processIdentifier: Int32 = 0

    public init() {}

    public convenience init(_ executable: String, _ arguments: [String]) {
        self.init()
        executableURL = URL(fileURLWithPath: executable)
        self.arguments = arguments
    }

    deinit {
        // Reaps a child that already ended, so that it does not stay a zombie.
        if processIdentifier > 0 { _ = isRunning }
    }

    public func run() throws {
        guard let executable = executableURL?.path else { throw PeerError("ChildProcess: no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (stream, fd) in [(standardInput, STDIN_FILENO), (standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)] {
            switch stream {
            case let pipe as Pipe:
                let end = fd == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, fd)
            case let handle as FileHandle where handle.fileDescriptor >= 0:
                if handle.fileDescriptor != fd { posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, fd) }
            default:
                // nil, or FileHandle.nullDevice (which has no descriptor).
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
            }
        }
        _ = Self.closeFrom(&actions, 3)
        if let folder = currentDirectoryURL?.path { _ = Self.changeFolder(&actions, folder) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + (arguments ?? [])).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned: Int32
        if let environment {
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for variable in envp { free(variable) } }
            spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        } else {
            spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        guard spawned == 0 else { throw PeerError("cannot start \(executable): \(String(cString: strerror(spawned)))") }
        processIdentifier = pid
        // The child's ends of pipes belong to the child now: closed here, a reader sees the end
        // of the output when the child exits.
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
        if let pipe = standardOutput as? Pipe { try? pipe.fileHandleForWriting.close() }
        if let pipe = standardError as? Pipe, pipe !== standardOutput as? Pipe { try? pipe.fileHandleForWriting.close() }
    }

    /// Whether the child runs (reaps it when it has ended).
    public var isRunning: Bool {
        exit.withLock { status in
            guard status == nil else { return false }
            guard processIdentifier > 0 else { return false }
            var raw: Int32 = 0
            let reaped = waitpid(processIdentifier, &raw, WNOHANG)
            if reaped == processIdentifier { status = raw; return false }
            return reaped == 0 || (reaped < 0 && errno == EINTR)
        }
    }

    /// Returns once the child has ended (checking every 5 ms: never in a run loop).
    public func waitUntilExit() {
        while isRunning { usleep(5_000) }
    }

    /// The exit code, or the number of the signal that ended the child.
    public var terminationStatus: Int32 {
        guard let raw = exit.withLock({ $0 }) else { return 0 }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    public var terminationReason: TerminationReason {
        guard let raw = exit.withLock({ $0 }) else { return .exit }
        return raw & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    public func terminate() { if isRunning { kill(processIdentifier, SIGTERM) } }
    public func interrupt() { if isRunning { kill(processIdentifier, SIGINT) } }

    // glibc's (2.34) GNU extensions, which Swift's Glibc module does not declare.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeFolder = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let closeFrom: CloseFrom = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
        }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()
    private static let changeFolder: ChangeFolder = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") else {
            fatalError("this C library has no posix_spawn_file_actions_addchdir_np (glibc 2.29 or later)")
        }
        return unsafeBitCast(symbol, to: ChangeFolder.self)
    }()
}
