import Foundation

/// The processes that hold a device node open (`/dev/bus/usb/001/005`), as far as this process may
/// see: another user's `/proc/PID/fd` is readable by root only, and a unit with
/// `ProtectProc=invisible` sees none but its own. For an error that says "another program holds
/// it" to name that program.
public enum DeviceNodeHolders {
    public struct Holder: Hashable, Sendable, CustomStringConvertible {
        public var pid: Int32
        /// The process's command name (`/proc/PID/comm`).
        public var command: String

        public init(pid: Int32, command: String) {
            self.pid = pid
            self.command = command
        }

        public var description: String { "\(command) (pid \(pid))" }
    }

    /// Processes under `proc` with a descriptor open on `node`, by pid; `excluding` (by default
    /// this process) left out.
    public static func holders(of node: String, proc: String = "/proc", excluding: Int32? = nil) -> [Holder] {
        let excluding = excluding ?? getpid()
        let files = FileManager.default
        guard let entries = try? files.contentsOfDirectory(atPath: proc) else { return [] }
        var found: [Holder] = []
        for entry in entries {
            guard let pid = Int32(entry), pid != excluding,
                  let fds = try? files.contentsOfDirectory(atPath: "\(proc)/\(entry)/fd") else { continue }
            let holds = fds.contains { fd in (try? files.destinationOfSymbolicLink(atPath: "\(proc)/\(entry)/fd/\(fd)")) == node }
            guard holds else { continue }
            let command = (try? String(contentsOfFile: "\(proc)/\(entry)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            found.append(Holder(pid: pid, command: command))
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// The device node of a USB device: `/dev/bus/usb/BBB/DDD`.
    public static func node(bus: UInt8, address: UInt8) -> String {
        String(format: "/dev/bus/usb/%03d/%03d", bus, address)
    }
}
