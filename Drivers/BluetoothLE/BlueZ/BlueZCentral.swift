public import BluetoothCentral
import Foundation
import Synchronization
import Timing

/// The BlueZ backend: a `BLECentral` that drives the system's bluetoothd over D-Bus (sd-bus),
/// so the adapter stays shared with the rest of the system.
///
/// One `SDBus` connection on its own thread owns everything: the object tree (`BlueZObjectTree`,
/// fed by `GetManagedObjects` and the ObjectManager and Properties signals), the scans, the
/// links and their subscriptions. The public calls post work to that thread and wait for its
/// answer; device sessions run on a serial queue of their own.
public final class BlueZCentral: BLECentral, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The adapter (`hci1`); nil for bluetoothd's first one.
        public var adapter: String?
        /// Services for the discovery filter (bluetoothd then reports only devices advertising
        /// one of them); nil or empty: every LE device.
        public var discoveryServices: [BluetoothUUID]?
        /// The shortest time a connect is given.
        public var minimumConnectTimeout: Duration = .seconds(20)
        public var log: (@Sendable (String) -> Void)?
        /// Called (on the bus thread) when bluetoothd or the adapter goes away or comes back, or
        /// the bus connection is lost: a line for a user or a log, and whether it is a loss
        /// (`trouble`) or a recovery. The same lines also go to `log`.
        public var onChange: (@Sendable (_ message: String, _ trouble: Bool) -> Void)?
        /// `open` waits (until cancelled) while the system bus does not answer, bluetoothd is not
        /// running, the adapter is missing or powered off, reporting what it waits for once
        /// through `onChange`, instead of failing: a daemon started before D-Bus or bluetoothd,
        /// or before its adapter was plugged in, or whose bus connection was lost, records as soon
        /// as they are there.
        public var waitUntilUsable = false
        /// The D-Bus address of the bus bluetoothd is on; nil: the system bus
        /// (`DBUS_SYSTEM_BUS_ADDRESS` or its default socket). Tests give their own dbus-daemon's.
        public var busAddress: String?
        public init(adapter: String? = nil) { self.adapter = adapter }
    }

    /// How long a link's AcquireNotify sockets are read after the link ended, at most: bluetoothd
    /// closes them when it notices (or exits), and what it wrote before is a reading.
    static let notifySocketGrace: Duration = .seconds(2)

    public let configuration: Configuration
    /// The adapter chosen at start (`/org/bluez/hci0`); after a replug under another name the
    /// bus thread's state follows the controller (``BlueZObjectTree/replacementAdapter(after:current:address:)``).
    public let adapterPath: String
    let bus: SDBus
    let state: State
    private let executor = QueueExecutor(label: "healthgate.bluez.sessions")

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private init(configuration: Configuration, bus: SDBus, state: State, adapterPath: String) {
        self.configuration = configuration
        self.bus = bus
        self.state = state
        self.adapterPath = adapterPath
    }

    /// Connects to the system bus, loads bluetoothd's objects and picks the adapter. Fails when
    /// the bus does not answer, bluetoothd is not running, the adapter does not exist or is
    /// powered off (or waits for them: `Configuration.waitUntilUsable`).
    public static func open(_ configuration: Configuration = Configuration()) async throws(BLEError) -> BlueZCentral {
        let bus = try await openBus(configuration)
        let state = State(bus: bus, log: configuration.log ?? { _ in }, change: configuration.onChange ?? { _, _ in })
        bus.post { bus.owner = state }  // the signal handlers hold the state unowned: it lives as long as the loop
        let adapterPath: String
        do {
            adapterPath = try await onBus(bus) { (reply: Reply<String>) in
                state.start(adapter: configuration.adapter, wait: configuration.waitUntilUsable, reply)
            }
        } catch {
            bus.close()
            throw error
        }
        return BlueZCentral(configuration: configuration, bus: bus, state: state, adapterPath: adapterPath)
    }

    /// The system bus; while it does not answer, with `waitUntilUsable`, tried again every second
    /// (said once through `onChange` and `log`), until cancelled.
    private static func openBus(_ configuration: Configuration) async throws(BLEError) -> SDBus {
        var waiting = false
        while true {
            do {
                let bus = try await SDBus.open(address: configuration.busAddress)
                if waiting { report(configuration, "the system bus answers", trouble: false) }
                return bus
            } catch {
                guard configuration.waitUntilUsable else { throw .bluez("D-Bus: \(error)") }
                if !waiting { report(configuration, "the system bus does not answer (\(error)); waiting", trouble: true) }
                waiting = true
            }
            do { try await Task.sleep(for: .seconds(1)) } catch { throw .cancelled }
        }
    }

    private static func report(_ configuration: Configuration, _ message: String, trouble: Bool) {
        configuration.log?(message)
        configuration.onChange?(message, trouble)
    }

    /// Stops scans, ends the links' subscriptions (bluetoothd disconnects devices nobody else
    /// uses) and closes the bus.
    public func close() async {
        try? await Self.onBus(bus) { (reply: Reply<Void>) in self.state.shutdown(reply) }
        bus.close()
    }

    public func scan(for duration: Duration) async throws(BLEError) -> AsyncStream<DiscoveredDevice> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveredDevice.self, bufferingPolicy: .unbounded)
        let state = self.state, bus = self.bus, filter = configuration.discoveryServices
        let id: UInt64 = try await Self.onBus(bus) { (reply: Reply<UInt64>) in
            state.startScan(continuation: continuation, filter: filter, reply)
        }
        continuation.onTermination = { _ in bus.post { state.stopScan(id) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + duration.inSeconds) { bus.post { state.stopScan(id) } }
        return stream
    }

    public func connect(_ peer: DeviceAddress, timeout: Duration) async throws(BLEError) -> any BLEConnection {
        let state = self.state
        // bluetoothd connects in its own time (its LE connection attempt, then the ATT MTU
        // exchange): a shorter wait would cancel attempts that were about to succeed.
        let timeout = max(timeout, configuration.minimumConnectTimeout)
        let path: String = try await Self.onBus(bus, timeout: timeout, onTimeout: .connectTimedOut(peer)) { (reply: Reply<String>) in
            state.connect(peer, timeout: timeout, reply)
        }
        return BlueZConnection(central: self, peer: peer, path: path)
    }

    // MARK: Connections

    final class BlueZConnection: BLEConnection, @unchecked Sendable {
        let central: BlueZCentral
        let peer: DeviceAddress
        let path: String

        init(central: BlueZCentral, peer: DeviceAddress, path: String) {
            self.central = central
            self.peer = peer
            self.path = path
        }

        func discover(timeout: Duration) async throws(BLEError) -> GATTDatabase {
            let state = central.state, path = self.path
            return try await BlueZCentral.onBus(central.bus, timeout: timeout, onTimeout: .timedOut("GATT discovery (ServicesResolved)")) {
                (reply: Reply<GATTDatabase>) in state.whenResolved(path, reply)
            }
        }

        func read(_ characteristic: BluetoothUUID, timeout: Duration) async throws(BLEError) -> [UInt8] {
            let state = central.state, path = self.path
            return try await BlueZCentral.onBus(central.bus, timeout: timeout + .seconds(1), onTimeout: .timedOut("read \(characteristic)")) {
                (reply: Reply<[UInt8]>) in state.read(path, characteristic, timeout: timeout, reply)
            }
        }

        func write(_ characteristic: BluetoothUUID, _ value: [UInt8], timeout: Duration) async throws(BLEError) {
            let state = central.state, path = self.path
            try await BlueZCentral.onBus(central.bus, timeout: timeout + .seconds(1), onTimeout: .timedOut("write \(characteristic)")) {
                (reply: Reply<Void>) in state.write(path, characteristic, value, timeout: timeout, reply)
            }
        }

        func subscribe(_ characteristic: BluetoothUUID, into continuation: AsyncStream<GATTNotification>.Continuation,
                       timeout: Duration) async throws(BLEError) {
            let state = central.state, path = self.path, peer = self.peer
            try await BlueZCentral.onBus(central.bus, timeout: timeout + .seconds(1), onTimeout: .timedOut("subscribe \(characteristic)")) {
                (reply: Reply<Void>) in state.subscribe(path, peer: peer, characteristic, into: continuation, timeout: timeout, reply)
            }
        }

        @discardableResult
        func disconnect(timeout: Duration) async throws(BLEError) -> HCIStatus? {
            let state = central.state, path = self.path
            try await BlueZCentral.onBus(central.bus, timeout: timeout, onTimeout: .timedOut("disconnect")) { (reply: Reply<Void>) in
                state.disconnect(path, timeout: timeout, reply)
            }
            return .localHostTerminated
        }

        func disconnected(timeout: Duration?) async throws(BLEError) -> HCIStatus? {
            let state = central.state, path = self.path
            let body: @Sendable (Reply<Void>) -> Void = { reply in state.whenDisconnected(path, reply) }
            if let timeout {
                try await BlueZCentral.onBus(central.bus, timeout: timeout, onTimeout: .timedOut("waiting for the disconnection"), body)
            } else {
                try await BlueZCentral.onBus(central.bus, body)
            }
            return nil
        }
    }

    // MARK: Bridging to the bus thread

    /// One answer from the bus thread; the first `resolve` wins.
    final class Reply<T: Sendable>: @unchecked Sendable {
        private let done: Mutex<(@Sendable (Result<T, BLEError>) -> Void)?>
        init(_ done: @escaping @Sendable (Result<T, BLEError>) -> Void) { self.done = Mutex(done) }
        func resolve(_ result: Result<T, BLEError>) {
            done.withLock { d in defer { d = nil }; return d }?(result)
        }
        func succeed(_ value: T) { resolve(.success(value)) }
        func fail(_ error: BLEError) { resolve(.failure(error)) }
        var isResolved: Bool { done.withLock { $0 == nil } }
    }

    /// Runs `body` on the bus thread and waits for its reply; `timeout` fails it with `onTimeout`,
    /// cancelling the calling task fails it with `.cancelled`.
    static func onBus<T: Sendable>(_ bus: SDBus, timeout: Duration? = nil, onTimeout: BLEError = .timedOut("D-Bus call"),
                                   _ body: @escaping @Sendable (Reply<T>) -> Void) async throws(BLEError) -> T {
        let holder = Mutex<Reply<T>?>(nil)
        let result: Result<T, BLEError> = await withTaskCancellationHandler {
            await withCheckedContinuation { c in
                let reply = Reply<T> { c.resume(returning: $0) }
                holder.withLock { $0 = reply }
                if Task.isCancelled { return reply.fail(.cancelled) }
                if let timeout {
                    DispatchQueue.global().asyncAfter(deadline: .now() + timeout.inSeconds) { reply.fail(onTimeout) }
                }
                bus.post { body(reply) }
            }
        } onCancel: {
            holder.withLock { $0 }?.fail(.cancelled)
        }
        return try result.get()
    }

    // MARK: The bus thread's state

    final class State: @unchecked Sendable {
        let bus: SDBus
        let log: @Sendable (String) -> Void
        let change: @Sendable (String, Bool) -> Void
        var tree = BlueZObjectTree()
        /// bluetoothd, the adapter in use and the start, as decisions (`BlueZAdapterState`).
        var adapter = BlueZAdapterState()
        /// The reply of a start that waits for bluetoothd or its adapter
        /// (`Configuration.waitUntilUsable`).
        var startReply: Reply<String>?
        var adapterPath: String { adapter.adapterPath }
        var lost: String? { adapter.lost }
        var nextID: UInt64 = 1

        struct Scan {
            var continuation: AsyncStream<DiscoveredDevice>.Continuation
            var reported: [String: DiscoveredDevice] = [:]
        }
        var scans: [UInt64: Scan] = [:]
        /// Connects waiting for their device to be discovered.
        var awaitingDevice: [UInt64: (address: DeviceAddress, found: (String) -> Void)] = [:]
        var discoveryUsers = 0
        var discoveryRunning = false
        var discoveryFilter: [BluetoothUUID]?

        struct Link {
            var id: UInt64
            var resolvedWaiters: [Reply<GATTDatabase>] = []
            var disconnectWaiters: [Reply<Void>] = []
            /// StartNotify subscriptions: characteristic path -> (uuid, value handle, sink).
            var valueSinks: [String: (BluetoothUUID, UInt16, AsyncStream<GATTNotification>.Continuation)] = [:]
            /// AcquireNotify sockets of this link.
            var sockets: [Int32] = []
        }
        var links: [String: Link] = [:]

        init(bus: SDBus, log: @escaping @Sendable (String) -> Void, change: @escaping @Sendable (String, Bool) -> Void = { _, _ in }) {
            self.bus = bus
            self.log = log
            self.change = change
        }

        /// Carries out what `BlueZAdapterState` decided.
        func perform(_ actions: [BlueZAdapterState.Action]) {
            for action in actions {
                switch action {
                case .report(let message, let trouble):
                    log(message)
                    change(message, trouble)
                case .endLinks:
                    for path in links.keys.sorted() { endLink(path) }
                case .stopScans:
                    for id in scans.keys.sorted() { stopScan(id) }
                case .forgetObjects:
                    apply(tree.clear())
                    for (_, scan) in scans { scan.continuation.finish() }
                    scans = [:]
                    discoveryRunning = false
                    discoveryUsers = 0
                case .discoveryStopped:
                    discoveryRunning = false
                case .started(let path):
                    startReply?.succeed(path)
                    startReply = nil
                case .startFailed(let error):
                    startReply?.fail(error)
                    startReply = nil
                }
            }
        }

        /// Why the adapter in use cannot be used now (nil: it can): bluetoothd away, the adapter
        /// gone or powered off.
        func unusable() -> String? { adapter.unusable(tree) }

        func call(_ path: String, _ interface: String, _ member: String, _ args: [DBusValue] = [], timeout: Duration = .seconds(25),
                  _ reply: @escaping (Result<[DBusValue], DBusError>) -> Void) {
            bus.call(BlueZ.service, path, interface, member, args, timeout: timeout, reply: reply)
        }

        // MARK: Start

        func start(adapter name: String?, wait: Bool = false, _ reply: Reply<String>) {
            startReply = reply
            bus.onConnectionLost = { [unowned self] error in perform(adapter.busLost("\(error)")) }
            do {
                try bus.addMatch("type='signal',interface='org.freedesktop.DBus.ObjectManager',path='/'") { [unowned self] s in
                    guard adapter.owner == nil || s.sender == adapter.owner, s.args.count == 2, let path = s.args[0].string,
                          path.hasPrefix("/org/bluez/") else { return }
                    if s.member == "InterfacesAdded" {
                        apply(tree.interfacesAdded(path: path, interfaces: s.args[1]))
                    } else if s.member == "InterfacesRemoved" {
                        apply(tree.interfacesRemoved(path: path, interfaces: s.args[1].strings ?? []))
                    }
                }
                try bus.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='/org/bluez'") {
                    [unowned self] s in
                    guard adapter.owner == nil || s.sender == adapter.owner, s.args.count == 3, let interface = s.args[0].string else { return }
                    let changes = tree.propertiesChanged(path: s.path, interface: interface, changed: s.args[1],
                                                         invalidated: s.args[2].strings ?? [])
                    if interface == BlueZ.gattCharacteristic, let value = s.args[1].properties?["Value"]?.bytes {
                        deliverValue(s.path, value)
                    }
                    apply(changes)
                }
                try bus.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.bluez'") {
                    [unowned self] s in
                    guard s.args.count == 3 else { return }
                    let new = s.args[2].string ?? ""
                    if new.isEmpty {
                        perform(adapter.ownerLeft(links: links.count))
                    } else {
                        perform(adapter.ownerArrived(new))
                        loadObjects { [unowned self] error in
                            if let error { return log("BlueZ GetManagedObjects: \(error)") }
                            perform(adapter.resume(tree: tree, abandoned: startReply?.isResolved ?? true))
                        }
                    }
                }
            } catch {
                startReply = nil
                return reply.fail(.bluez("D-Bus: \(error)"))
            }
            bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(BlueZ.service)],
                     timeout: .seconds(10)) { [unowned self] result in
                switch result {
                case .failure(let error):
                    perform(adapter.startWithoutBluetoothd(adapter: name, wait: wait, error: "\(error)"))
                case .success(let args):
                    adapter.owner = args.first?.string
                    loadObjects { [unowned self] error in
                        if let error { return perform([.startFailed(.bluez("BlueZ GetManagedObjects: \(error)"))]) }
                        perform(adapter.start(adapter: name, wait: wait, tree: tree))
                    }
                }
            }
        }

        func loadObjects(_ done: @escaping (DBusError?) -> Void) {
            call("/", BlueZ.objectManager, "GetManagedObjects", timeout: .seconds(10)) { [unowned self] result in
                switch result {
                case .failure(let error): done(error)
                case .success(let args):
                    adapter.objectsLoaded = true
                    apply(tree.load(managedObjects: args.first ?? .dict([])))
                    done(nil)
                }
            }
        }

        func shutdown(_ reply: Reply<Void>) {
            for (id, _) in scans { stopScan(id) }
            for (path, _) in links { endLink(path) }
            reply.succeed(())
        }

        // MARK: Changes

        func apply(_ changes: [BlueZObjectTree.Change]) {
            for change in changes {
                switch change {
                case .added(let path, BlueZ.device):
                    deviceSeen(path, change: change)
                case .changed(let path, BlueZ.device, let keys):
                    deviceSeen(path, change: change)
                    linkChanged(path, keys: keys)
                case .removed(let path, BlueZ.device):
                    endLink(path)
                case .added(_, BlueZ.adapter), .removed(_, BlueZ.adapter), .changed(_, BlueZ.adapter, _):
                    perform(adapter.adapterChanged(change, tree: tree, links: links.count, abandonedStart: startReply?.isResolved ?? true))
                default:
                    break
                }
            }
        }

        /// A device was added or its advertising-related properties changed: report it to the
        /// scans and to connects waiting for it.
        func deviceSeen(_ path: String, change: BlueZObjectTree.Change) {
            guard let device = tree.device(at: path), device.adapterPath == adapterPath else { return }
            if case .changed(_, _, let keys) = change,
               keys.allSatisfy({ !["RSSI", "Name", "UUIDs", "ManufacturerData", "ServiceData", "TxPower", "AdvertisingFlags"].contains($0) }) {
                return
            }
            let discovered = device.discovered
            for (id, var scan) in scans where BlueZObjectTree.isNews(discovered, after: scan.reported[path]) {
                scan.reported[path] = discovered
                scans[id] = scan
                scan.continuation.yield(discovered)
            }
            for (id, waiter) in awaitingDevice where waiter.address.value == device.address.value {
                awaitingDevice[id] = nil
                waiter.found(path)
                releaseDiscovery()
            }
        }

        // MARK: Discovery

        func startScan(continuation: AsyncStream<DiscoveredDevice>.Continuation, filter: [BluetoothUUID]?, _ reply: Reply<UInt64>) {
            if let lost {
                continuation.finish()
                return reply.fail(.backendLost(lost))
            }
            if let why = unusable() {
                continuation.finish()
                return reply.fail(.bluez(why))
            }
            let id = nextID
            nextID += 1
            discoveryFilter = filter
            useDiscovery { [unowned self] error in
                if let error {
                    continuation.finish()
                    return reply.fail(.bluez("BlueZ StartDiscovery: \(error)"))
                }
                var scan = Scan(continuation: continuation)
                // Devices bluetoothd heard recently (RSSI is cleared when discovery stops).
                for path in tree.objects.keys.sorted() {
                    guard let d = tree.device(at: path), d.adapterPath == adapterPath, d.rssi != nil else { continue }
                    if let filter, !filter.isEmpty, !d.serviceUUIDs.contains(where: filter.contains) { continue }
                    scan.reported[path] = d.discovered
                    continuation.yield(d.discovered)
                }
                scans[id] = scan
                reply.succeed(id)
            }
        }

        func stopScan(_ id: UInt64) {
            guard let scan = scans.removeValue(forKey: id) else { return }
            scan.continuation.finish()
            releaseDiscovery()
        }

        /// Counts a user of discovery, starting it (filter first) for the first one.
        func useDiscovery(_ done: @escaping (DBusError?) -> Void) {
            discoveryUsers += 1
            guard !discoveryRunning else { return done(nil) }
            discoveryRunning = true
            let filter = BlueZObjectTree.discoveryFilter(services: discoveryFilter)
            call(adapterPath, BlueZ.adapter, "SetDiscoveryFilter", [filter], timeout: .seconds(10)) { [unowned self] result in
                if case .failure(let error) = result { log("SetDiscoveryFilter: \(error)") }
                call(adapterPath, BlueZ.adapter, "StartDiscovery", timeout: .seconds(10)) { [unowned self] result in
                    if case .failure(let error) = result, !error.name.hasSuffix("InProgress") {
                        discoveryRunning = false
                        discoveryUsers -= 1
                        return done(error)
                    }
                    done(nil)
                }
            }
        }

        func releaseDiscovery() {
            discoveryUsers = max(0, discoveryUsers - 1)
            guard discoveryUsers == 0, discoveryRunning else { return }
            discoveryRunning = false
            call(adapterPath, BlueZ.adapter, "StopDiscovery", timeout: .seconds(10)) { [unowned self] result in
                if case .failure(let error) = result { log("StopDiscovery: \(error)") }
            }
        }

        // MARK: Links

        func connect(_ peer: DeviceAddress, timeout: Duration, _ reply: Reply<String>) {
            if let lost { return reply.fail(.backendLost(lost)) }
            if !adapterPath.isEmpty, let why = unusable() { return reply.fail(.bluez(why)) }
            if let device = tree.device(adapterPath: adapterPath, address: peer) {
                return connectDevice(device.path, peer: peer, timeout: timeout, reply)
            }
            // Unknown to bluetoothd (never seen, or forgotten): discover until it shows up.
            let id = nextID
            nextID += 1
            awaitingDevice[id] = (peer, { [unowned self] path in
                guard !reply.isResolved else { return }
                connectDevice(path, peer: peer, timeout: timeout, reply)
            })
            useDiscovery { [unowned self] error in
                guard let error else { return }
                awaitingDevice[id] = nil
                reply.fail(.bluez("BlueZ StartDiscovery: \(error)"))
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.inSeconds) { [bus] in
                bus.post { [unowned self] in
                    guard awaitingDevice.removeValue(forKey: id) != nil else { return }
                    releaseDiscovery()
                    reply.fail(.connectTimedOut(peer))
                }
            }
        }

        func connectDevice(_ path: String, peer: DeviceAddress, timeout: Duration, _ reply: Reply<String>) {
            call(path, BlueZ.device, "Connect", timeout: timeout) { [unowned self] result in
                if case .failure(let error) = result, !error.name.hasSuffix("AlreadyConnected") {
                    // A connect BlueZ is still trying would complete later: cancel it.
                    call(path, BlueZ.device, "Disconnect", timeout: .seconds(5)) { _ in }
                    return reply.fail(error.name.hasSuffix("NoReply") || error.name.contains("Timeout")
                                      ? .connectTimedOut(peer) : .bluez("BlueZ Connect: \(error)"))
                }
                guard !reply.isResolved else {
                    // The caller gave up meanwhile: do not leave the link up for nobody.
                    call(path, BlueZ.device, "Disconnect", timeout: .seconds(5)) { _ in }
                    return
                }
                if let old = links[path] { endLink(path, old.id) }
                let id = nextID
                nextID += 1
                links[path] = Link(id: id)
                reply.succeed(path)
            }
        }

        /// Device properties changed: Connected false ends the link, ServicesResolved wakes the
        /// discovery waiters.
        func linkChanged(_ path: String, keys: [String]) {
            guard var link = links[path], let device = tree.device(at: path) else { return }
            if keys.contains("Connected"), !device.connected { return endLink(path) }
            if device.servicesResolved, !link.resolvedWaiters.isEmpty {
                let database = tree.database(devicePath: path)
                for w in link.resolvedWaiters { w.succeed(database) }
                link.resolvedWaiters = []
                links[path] = link
            }
        }

        /// The link is down: its waiters are answered. Its notification sockets are read on until
        /// bluetoothd closes them, `notifySocketGrace` at most: what bluetoothd wrote before it
        /// noticed (or before it or the bus went) is delivered, not dropped with the link.
        func endLink(_ path: String, _ id: UInt64? = nil) {
            guard let link = links[path], id == nil || link.id == id else { return }
            links[path] = nil
            for w in link.resolvedWaiters { w.fail(.disconnected(nil)) }
            for w in link.disconnectWaiters { w.succeed(()) }
            for fd in link.sockets { bus.unwatch(fd, within: BlueZCentral.notifySocketGrace) }
        }

        func whenResolved(_ path: String, _ reply: Reply<GATTDatabase>) {
            guard var link = links[path] else { return reply.fail(.disconnected(nil)) }
            if tree.device(at: path)?.servicesResolved == true { return reply.succeed(tree.database(devicePath: path)) }
            link.resolvedWaiters.append(reply)
            links[path] = link
        }

        func whenDisconnected(_ path: String, _ reply: Reply<Void>) {
            guard var link = links[path] else { return reply.succeed(()) }
            link.disconnectWaiters.append(reply)
            links[path] = link
        }

        func disconnect(_ path: String, timeout: Duration, _ reply: Reply<Void>) {
            guard links[path] != nil else { return reply.succeed(()) }
            whenDisconnected(path, reply)
            call(path, BlueZ.device, "Disconnect", timeout: timeout) { [unowned self] result in
                if case .failure(let error) = result { log("Disconnect \(path): \(error)") }
                // Disconnect returns once the link is down; the property may follow later.
                if case .success = result, tree.device(at: path)?.connected == false { endLink(path) }
            }
        }

        func characteristic(_ path: String, _ uuid: BluetoothUUID) -> BlueZObjectTree.Characteristic? {
            tree.characteristics(devicePath: path).first { $0.uuid == uuid }
        }

        func read(_ path: String, _ uuid: BluetoothUUID, timeout: Duration, _ reply: Reply<[UInt8]>) {
            guard links[path] != nil else { return reply.fail(.disconnected(nil)) }
            guard let c = characteristic(path, uuid) else { return reply.fail(.characteristicNotFound(uuid)) }
            call(c.path, BlueZ.gattCharacteristic, "ReadValue", [.dict([])], timeout: timeout) { result in
                switch result {
                case .success(let args): reply.succeed(args.first?.bytes ?? [])
                case .failure(let error): reply.fail(.bluez("ReadValue \(uuid): \(error)"))
                }
            }
        }

        /// `WriteValue` with a response (`type` `request`).
        func write(_ path: String, _ uuid: BluetoothUUID, _ value: [UInt8], timeout: Duration, _ reply: Reply<Void>) {
            guard links[path] != nil else { return reply.fail(.disconnected(nil)) }
            guard let c = characteristic(path, uuid) else { return reply.fail(.characteristicNotFound(uuid)) }
            call(c.path, BlueZ.gattCharacteristic, "WriteValue", [.bytes(value), .dict([DBusEntry(.string("type"), .string("request"))])],
                 timeout: timeout) { result in
                switch result {
                case .success: reply.succeed(())
                case .failure(let error): reply.fail(.bluez("WriteValue \(uuid): \(error)"))
                }
            }
        }

        func subscribe(_ path: String, peer: DeviceAddress, _ uuid: BluetoothUUID,
                       into continuation: AsyncStream<GATTNotification>.Continuation, timeout: Duration, _ reply: Reply<Void>) {
            guard links[path] != nil else { return reply.fail(.disconnected(nil)) }
            guard let c = characteristic(path, uuid) else { return reply.fail(.characteristicNotFound(uuid)) }
            let valueHandle = (BlueZObjectTree.handle(of: c.path) ?? 0) &+ 1
            guard c.flags.contains("notify") || c.flags.contains("indicate") else {
                return reply.fail(.cannotSubscribe(uuid, "it neither notifies nor indicates"))
            }
            let startNotify = { [unowned self] in
                links[path]?.valueSinks[c.path] = (uuid, valueHandle, continuation)
                call(c.path, BlueZ.gattCharacteristic, "StartNotify", timeout: timeout) { [unowned self] result in
                    switch result {
                    case .success: reply.succeed(())
                    case .failure(let error):
                        links[path]?.valueSinks[c.path] = nil
                        reply.fail(.cannotSubscribe(uuid, "StartNotify: \(error)"))
                    }
                }
            }
            guard c.flags.contains("notify"), c.offersAcquireNotify else { return startNotify() }
            call(c.path, BlueZ.gattCharacteristic, "AcquireNotify", [.dict([])], timeout: timeout) { [unowned self] result in
                guard case .success(let args) = result, case .fd(let fd)? = args.first, fd >= 0 else {
                    if case .failure(let error) = result { log("AcquireNotify \(uuid): \(error); using StartNotify") }
                    return startNotify()
                }
                guard links[path] != nil else {
                    Glibc.close(fd)
                    return reply.fail(.disconnected(nil))
                }
                links[path]?.sockets.append(fd)
                let flags = fcntl(fd, F_GETFL)
                _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
                var buffer = [UInt8](repeating: 0, count: 1024)
                bus.watch(fd) { [unowned self] revents in
                    // One recv is one notification (a SOCK_SEQPACKET socket).
                    while true {
                        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                        if n > 0 {
                            continuation.yield(GATTNotification(peer: peer, characteristic: uuid, valueHandle: valueHandle,
                                                                value: Array(buffer[0..<n]), receivedAt: Date()))
                            continue
                        }
                        if n < 0 && (errno == EAGAIN || errno == EINTR) && revents & Int16(POLLHUP | POLLERR) == 0 { return }
                        break
                    }
                    // Closed by bluetoothd (unsubscribed, or the link went down).
                    links[path]?.sockets.removeAll { $0 == fd }
                    bus.unwatch(fd)
                }
                reply.succeed(())
            }
        }

        /// A `Value` PropertiesChanged of a characteristic subscribed with StartNotify.
        func deliverValue(_ characteristicPath: String, _ value: [UInt8]) {
            guard let devicePath = links.keys.first(where: { characteristicPath.hasPrefix($0 + "/") }),
                  let (uuid, handle, sink) = links[devicePath]?.valueSinks[characteristicPath],
                  let peer = tree.device(at: devicePath)?.address else { return }
            sink.yield(GATTNotification(peer: peer, characteristic: uuid, valueHandle: handle, value: value, receivedAt: Date()))
        }
    }
}

extension BlueZCentral {
    /// True when some program (bluetoothd) owns `org.bluez` on the system bus.
    public static func isRunning() async -> Bool {
        guard let bus = try? await SDBus.open() else { return false }
        defer { bus.close() }
        let owner: String? = try? await onBus(bus, timeout: .seconds(10)) { (reply: Reply<String>) in
            bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(BlueZ.service)],
                     timeout: .seconds(5)) { result in
                switch result {
                case .success(let args): reply.succeed(args.first?.string ?? "")
                case .failure(let error): reply.fail(.bluez("\(error)"))
                }
            }
        }
        return owner?.isEmpty == false
    }
}
