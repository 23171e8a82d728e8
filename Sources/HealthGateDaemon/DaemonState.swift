import Foundation
import HealthModel
import Timing

/// What the running daemon reports about itself (`healthgate status`, the status socket, the
/// systemd status line): its drivers and their states, the last import, the last sync. The one
/// owner of that state; services report into it.
public actor DaemonState {
    /// One driver instance as the supervisor last saw it.
    public struct DriverStatus: Codable, Sendable, Equatable {
        public enum State: String, Codable, Sendable {
            /// `waiting`: running, but waiting for something outside it (`detail` says what).
            case starting, running, waiting, restarting, stopped, failed
        }
        public var name: String
        public var type: String
        public var state: State
        /// The last error or event worth showing.
        public var detail: String?
        public var restarts: Int
        public var since: String
        /// Devices connected now (BLE addresses), sorted.
        public var devices: [String] = []

        enum CodingKeys: String, CodingKey { case name, type, state, detail, restarts, since, devices }
    }

    /// A file imported by a watch folder or a watch's storage.
    public struct ImportEvent: Codable, Sendable, Equatable {
        public var driver: String
        public var path: String
        public var status: String
        public var records: Int
        public var at: String
    }

    /// Everything, as the status socket sends it.
    public struct Snapshot: Codable, Sendable, Equatable {
        public var pid: Int32
        public var startedAt: String
        public var database: String
        public var drivers: [DriverStatus]
        public var lastImport: ImportEvent?
        public var imports: Int
        public var lastSyncAt: String?
        public var lastSyncError: String?
        public var forwarded: Int
        public var server: String?

        enum CodingKeys: String, CodingKey {
            case pid, startedAt = "started_at", database, drivers, lastImport = "last_import", imports
            case lastSyncAt = "last_sync_at", lastSyncError = "last_sync_error", forwarded, server
        }
    }

    private var snapshot: Snapshot

    public init(database: String, server: String?) {
        snapshot = Snapshot(pid: getpid(), startedAt: ISO8601.string(Date()), database: database, drivers: [],
                            lastImport: nil, imports: 0, lastSyncAt: nil, lastSyncError: nil, forwarded: 0, server: server)
    }

    public func current() -> Snapshot { snapshot }

    /// Drivers that reported ``DriverEvent/ready``.
    private var readyDrivers: Set<String> = []
    private let readiness = Doorbell()

    public func driverReady(_ name: String) {
        readyDrivers.insert(name)
        readiness.ring()
    }

    /// Waits until every driver in `names` is ready, at most `limit`; answers those that are not.
    public func waitUntilReady(_ names: Set<String>, upTo limit: Duration) async -> Set<String> {
        let deadline = ContinuousClock.now + limit
        while !names.isSubset(of: readyDrivers), !Task.isCancelled {
            let left = deadline - .now
            guard left > .zero else { break }
            _ = await readiness.wait(upTo: left)
        }
        return names.subtracting(readyDrivers)
    }

    /// Sets a driver's state (adding it if new); `restarted` counts a restart.
    public func driver(_ name: String, type: String, _ state: DriverStatus.State, detail: String? = nil, restarted: Bool = false) {
        let now = ISO8601.string(Date())
        if let index = snapshot.drivers.firstIndex(where: { $0.name == name }) {
            if snapshot.drivers[index].state != state { snapshot.drivers[index].since = now }
            if state != .running { snapshot.drivers[index].devices = [] }
            snapshot.drivers[index].state = state
            snapshot.drivers[index].type = type
            snapshot.drivers[index].detail = detail
            if restarted { snapshot.drivers[index].restarts += 1 }
        } else {
            snapshot.drivers.append(DriverStatus(name: name, type: type, state: state, detail: detail, restarts: 0, since: now))
            snapshot.drivers.sort { $0.name < $1.name }
        }
    }

    /// A running driver waits for something outside it (`reason`), or works again (nil). A
    /// driver not running (restarting, stopped) keeps its state: its late reports change nothing.
    public func driver(_ name: String, waiting reason: String?) {
        guard let current = snapshot.drivers.first(where: { $0.name == name }),
              current.state == .running || current.state == .waiting else { return }
        if let reason {
            driver(name, type: current.type, .waiting, detail: reason)
        } else if current.state == .waiting {
            driver(name, type: current.type, .running)
        }
    }

    /// A device of `driver` connected or disconnected; returns how many of its devices are
    /// connected now.
    @discardableResult
    public func device(_ address: String, of driver: String, connected: Bool) -> Int {
        guard let index = snapshot.drivers.firstIndex(where: { $0.name == driver }) else { return 0 }
        var devices = Set(snapshot.drivers[index].devices)
        if connected { devices.insert(address) } else { devices.remove(address) }
        snapshot.drivers[index].devices = devices.sorted()
        return devices.count
    }

    /// Forgets a driver removed from the configuration.
    public func removeDriver(_ name: String) {
        snapshot.drivers.removeAll { $0.name == name }
    }

    public func imported(_ event: ImportEvent) {
        snapshot.lastImport = event
        snapshot.imports += 1
    }

    public func synced(forwarded: Int, error: String?) {
        if let error {
            snapshot.lastSyncError = error
        } else {
            snapshot.lastSyncAt = ISO8601.string(Date())
            snapshot.lastSyncError = nil
        }
        snapshot.forwarded += forwarded
    }

    /// The one-line summary for `systemctl status`.
    public func statusLine() -> String {
        let running = snapshot.drivers.filter { $0.state == .running }.count
        let waiting = snapshot.drivers.filter { $0.state == .waiting }.count
        var parts = ["\(running)/\(snapshot.drivers.count) drivers running" + (waiting > 0 ? ", \(waiting) waiting" : "")]
        if let error = snapshot.lastSyncError { parts.append("sync failing: \(error)") }
        else if let at = snapshot.lastSyncAt { parts.append("last sync \(at)") }
        return parts.joined(separator: ", ")
    }
}
