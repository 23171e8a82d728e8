import BluetoothCentral
@testable import BLEBlueZ
import BLEHost
import BLERuntime
import TestSupport
import Foundation
import Synchronization
import Testing

/// The adapter going down and up, and the advertising fields of a device, on the pure object tree.
struct BlueZAdapterAndAdvertisingTests {
    typealias T = BlueZObjectTreeTests
    static let otherAdapter = "/org/bluez/hci1"

    static func tree() -> BlueZObjectTree {
        var tree = BlueZObjectTree()
        tree.load(managedObjects: T.managedObjects)
        tree.interfacesAdded(path: otherAdapter, interfaces: T.adapterInterfaces)
        return tree
    }

    /// Powered false, then true: down, then up; the adapter is unusable in between and says why.
    @Test func poweredOffAndOnIsDownThenUp() throws {
        var tree = Self.tree()
        #expect(tree.adapterUnusable(T.adapter) == nil)
        let off = tree.propertiesChanged(path: T.adapter, interface: BlueZ.adapter, changed: T.props([("Powered", .bool(false))]),
                                         invalidated: [])
        #expect(off.compactMap { tree.adapterTransition($0, adapterPath: T.adapter) } == [.down])
        #expect(tree.adapterUnusable(T.adapter) == "BlueZ adapter hci0 is powered off")
        let on = tree.propertiesChanged(path: T.adapter, interface: BlueZ.adapter,
                                        changed: T.props([("Powered", .bool(true)), ("Discovering", .bool(false))]), invalidated: [])
        #expect(on.compactMap { tree.adapterTransition($0, adapterPath: T.adapter) } == [.up])
        #expect(tree.adapterUnusable(T.adapter) == nil)
    }

    /// A controller unplugged: the adapter object goes (with its devices); plugged back, it
    /// returns powered (up) or not (still down).
    @Test func removedAndAddedAgain() throws {
        var tree = Self.tree()
        let removed = tree.interfacesRemoved(path: T.adapter, interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        #expect(removed.compactMap { tree.adapterTransition($0, adapterPath: T.adapter) } == [.down])
        #expect(removed.contains(.removed(path: T.device, interface: BlueZ.device)))
        #expect(tree.adapterUnusable(T.adapter) == "BlueZ adapter hci0 is gone (removed or unplugged)")
        let added = tree.interfacesAdded(path: T.adapter, interfaces: T.adapterInterfaces)
        #expect(added.compactMap { tree.adapterTransition($0, adapterPath: T.adapter) } == [.up])
        tree.interfacesRemoved(path: T.adapter, interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        let unpowered = T.interfaces([(BlueZ.adapter, T.props([("Powered", .bool(false))]))])
        let addedOff = tree.interfacesAdded(path: T.adapter, interfaces: unpowered)
        #expect(addedOff.compactMap { tree.adapterTransition($0, adapterPath: T.adapter) } == [.down])
    }

    /// A controller unplugged and plugged back under another name is followed by its address;
    /// another controller is not taken over, and nothing changes while the one in use is there.
    @Test func aReplugUnderAnotherNameIsFollowed() throws {
        var tree = BlueZObjectTree()
        tree.load(managedObjects: T.managedObjects)
        let address = try #require(tree.adapter(at: T.adapter)?.address)
        #expect(address == "00:00:00:00:00:00")
        func added(_ path: String, address: String, powered: Bool = true) -> [BlueZObjectTree.Change] {
            tree.interfacesAdded(path: path, interfaces: T.interfaces([
                (BlueZ.adapter, T.props([("Address", .string(address)), ("Powered", .bool(powered))]))]))
        }
        func replacements(_ changes: [BlueZObjectTree.Change], current: String = T.adapter) -> [String] {
            changes.compactMap { tree.replacementAdapter(after: $0, current: current, address: address)?.path }
        }
        // The same address under another name while ours is still there (a stale object): no.
        #expect(replacements(added(Self.otherAdapter, address: address)) == [])
        tree.interfacesRemoved(path: Self.otherAdapter, interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        // Ours unplugged; another controller plugged in: not taken over.
        tree.interfacesRemoved(path: T.adapter, interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        #expect(replacements(added(Self.otherAdapter, address: "00:1A:7D:DA:71:13")) == [])
        // Ours back as hci2 (its address in lower case): followed, and up at the new path.
        let back = added("/org/bluez/hci2", address: address.lowercased())
        #expect(replacements(back) == ["/org/bluez/hci2"])
        #expect(back.compactMap { tree.adapterTransition($0, adapterPath: "/org/bluez/hci2") } == [.up])
        // Unplugged again and back powered off as hci3: followed, down until powered.
        tree.interfacesRemoved(path: "/org/bluez/hci2", interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        let off = added("/org/bluez/hci3", address: address, powered: false)
        #expect(replacements(off, current: "/org/bluez/hci2") == ["/org/bluez/hci3"])
        #expect(off.compactMap { tree.adapterTransition($0, adapterPath: "/org/bluez/hci3") } == [.down])
    }

    /// Other adapters, other properties and other objects are no transition of ours.
    @Test func unrelatedChangesAreNoTransition() {
        var tree = Self.tree()
        var changes = tree.propertiesChanged(path: Self.otherAdapter, interface: BlueZ.adapter,
                                             changed: T.props([("Powered", .bool(false))]), invalidated: [])
        changes += tree.propertiesChanged(path: T.adapter, interface: BlueZ.adapter, changed: T.props([("Discovering", .bool(true))]),
                                          invalidated: [])
        changes += tree.propertiesChanged(path: T.device, interface: BlueZ.device, changed: T.props([("Connected", .bool(false))]),
                                          invalidated: [])
        changes += tree.interfacesRemoved(path: Self.otherAdapter, interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        #expect(changes.count == 5)  // the other adapter's removal is two interfaces
        #expect(changes.compactMap { tree.adapterTransition($0, adapterPath: T.adapter) } == [])
    }

    /// ServiceData (a{sv}), ManufacturerData (a{qv}), TxPower (n) and AdvertisingFlags (ay)
    /// become the discovered device's fields, as the own stack fills them from advertising data;
    /// entries that do not parse are left out.
    @Test func advertisingFieldsReachTheDiscoveredDevice() throws {
        var tree = Self.tree()
        #expect(tree.device(at: T.device)?.discovered.serviceData == [])
        tree.propertiesChanged(path: T.device, interface: BlueZ.device, changed: T.props([
            ("ServiceData", .dict([
                DBusEntry(.string("00001826-0000-1000-8000-00805f9b34fb"), .bytes([0x01, 0x20, 0x00])),
                DBusEntry(.string("not a uuid"), .bytes([0x01])),
                DBusEntry(.string("0000feaa-0000-1000-8000-00805f9b34fb"), .array([.byte(0x10), .byte(0x00)])),
            ])),
            ("ManufacturerData", .dict([
                DBusEntry(.uint16(0x0059), .bytes([0xCA, 0xFE])),
                DBusEntry(.uint16(0xFFFF), .string("not bytes")),
            ])),
            ("TxPower", .int16(-8)),
            ("AdvertisingFlags", .bytes([0x06])),
        ]), invalidated: [])
        let d = try #require(tree.device(at: T.device)?.discovered)
        #expect(d.serviceData == [AdvertisingData.ServiceData(uuid: BluetoothUUID(0x1826), data: [0x01, 0x20, 0x00]),
                                  AdvertisingData.ServiceData(uuid: BluetoothUUID(0xFEAA), data: [0x10, 0x00])])
        #expect(d.manufacturerData == [AdvertisingData.ManufacturerData(companyIdentifier: 0x0059, data: [0xCA, 0xFE])])
        #expect(d.txPower == -8)
        #expect(d.flags == 0x06)
        // The same bytes through the own stack's parser give the same fields.
        let ad = try AdvertisingData.parse([0x02, 0x01, 0x06, 0x02, 0x0A, 0xF8, 0x06, 0x16, 0x26, 0x18, 0x01, 0x20, 0x00,
                                            0x05, 0x16, 0xAA, 0xFE, 0x10, 0x00, 0x05, 0xFF, 0x59, 0x00, 0xCA, 0xFE])
        #expect(ad.serviceData == d.serviceData && ad.manufacturerData == d.manufacturerData)
        #expect(ad.txPower == d.txPower && ad.flags == d.flags)
    }

    /// A scan reports a device again when what it advertises changed, not for a new RSSI.
    @Test func newsIsAdvertisingNotSignalStrength() {
        let tree = Self.tree()
        let d = tree.device(at: T.device)!.discovered
        #expect(BlueZObjectTree.isNews(d, after: nil))
        var louder = d
        louder.rssi = -30
        #expect(!BlueZObjectTree.isNews(louder, after: d))
        for change in [{ (x: inout DiscoveredDevice) in x.name = "other" },
                       { $0.serviceUUIDs = [] },
                       { $0.serviceData = [AdvertisingData.ServiceData(uuid: BluetoothUUID(0x180D), data: [1])] },
                       { $0.manufacturerData = [AdvertisingData.ManufacturerData(companyIdentifier: 1, data: [])] },
                       { $0.txPower = 4 },
                       { $0.flags = 2 }] {
            var changed = d
            change(&changed)
            #expect(BlueZObjectTree.isNews(changed, after: d))
        }
    }
}

/// The connection to the bus lost for good: a private dbus-daemon, started here on a socket in a
/// temporary folder, is killed under a connected `SDBus`.
@Suite(.serialized) struct BlueZBusLossTests {
    /// A fresh directory for a bus socket, and the address of the socket in it.
    static func busAddress() throws -> (URL, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hg-dbus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return (dir, "unix:path=\(dir.path)/bus")
    }

    /// Starts `dbus-daemon --session` on a fresh socket (or at `place`) and returns the process and
    /// the address once it accepts connections: it prints its address when it listens. The
    /// socket's file alone is not enough: it appears at bind(), before listen(), and a connection
    /// in between is refused (CI saw "system bus: Connection refused" that way).
    static func startDaemon(at place: (URL, String)? = nil) async throws -> (ChildProcess, String) {
        let (_, address) = try place ?? busAddress()
        let p = ChildProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        p.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)", "--print-address=1"]
        let printed = Pipe()
        p.standardOutput = printed
        try p.run()
        // Its first line, read (on a thread of its own) until a newline, its exit, or the
        // test's patience runs out.
        let line = try await onOwnThread { () -> String in
            let fd = printed.fileHandleForReading.fileDescriptor
            let deadline = Date().addingTimeInterval(Patience.seconds)
            var bytes: [UInt8] = []
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while !bytes.contains(UInt8(ascii: "\n")), Date() < deadline {
                guard poll(&ready, 1, 100) > 0 else { continue }
                var chunk = [UInt8](repeating: 0, count: 256)
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { break }
                bytes += chunk.prefix(n)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard line.hasPrefix(address) else {
            end(p, signal: SIGKILL)
            throw PeerError("dbus-daemon did not start on \(address): it printed '\(line)'")
        }
        return (p, address)
    }

    /// A client of the bus at `address` (given, not through the process's environment, which
    /// every test and every child process of this test run shares).
    static func open(_ address: String) async throws -> SDBus {
        try await SDBus.open(address: address)
    }

    /// Asks the daemon for its id: true when the bus answers.
    static func ping(_ bus: SDBus) async -> Result<[DBusValue], DBusError> {
        await withCheckedContinuation { c in
            bus.post {
                bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", timeout: .seconds(30)) {
                    c.resume(returning: $0)
                }
            }
        }
    }

    /// The daemon killed: the bus thread notices, and after that the BlueZ state fails a connect
    /// and a scan at once with `backendLost` (final: the device sessions and the recorder end,
    /// and the daemon's supervisor restarts the driver) instead of retrying for ever.
    @Test func killedDaemonEndsTheBackend() async throws {
        let (daemon, address) = try await Self.startDaemon()
        defer { if daemon.isRunning { daemon.terminate() } }
        let bus = try await Self.open(address)
        defer { bus.close() }
        guard case .success(let id) = await Self.ping(bus) else { Issue.record("the private bus did not answer"); return }
        #expect(id.first?.string?.count == 32)

        let lost = Mutex<[String]>([])
        let state = BlueZCentral.State(bus: bus, log: { line in lost.withLock { $0.append(line) } })
        bus.post { bus.owner = state }
        // Nothing owns org.bluez here, so start fails (saying so), but it watches the bus.
        let started: Result<String, BLEError> = await withCheckedContinuation { c in
            bus.post { state.start(adapter: nil, BlueZCentral.Reply<String> { c.resume(returning: $0) }) }
        }
        guard case .failure(let error) = started else { Issue.record("start succeeded without bluetoothd"); return }
        #expect(error.description.contains("bluetoothd is not running"))

        kill(daemon.processIdentifier, SIGKILL)
        daemon.waitUntilExit()
        try await eventually("the lost bus reported") { lost.withLock({ $0.contains { $0.hasPrefix("D-Bus connection lost") } }) }

        let peer = DeviceAddress(0xC0_4E_47_00_00_01, kind: .random)
        let connect: Result<String, BLEError> = await withCheckedContinuation { c in
            bus.post { state.connect(peer, timeout: .seconds(30), BlueZCentral.Reply<String> { c.resume(returning: $0) }) }
        }
        guard case .failure(let connectError) = connect else { Issue.record("connect succeeded without a bus"); return }
        #expect(connectError.isFinal, "\(connectError)")
        #expect(connectError.description.hasPrefix("the connection to the system bus was lost"))

        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveredDevice.self)
        let scan: Result<UInt64, BLEError> = await withCheckedContinuation { c in
            bus.post { state.startScan(continuation: continuation, filter: nil, BlueZCentral.Reply<UInt64> { c.resume(returning: $0) }) }
        }
        guard case .failure(let scanError) = scan else { Issue.record("a scan started without a bus"); return }
        #expect(scanError.isFinal)
        var yielded = 0
        for await _ in stream { yielded += 1 }
        #expect(yielded == 0)
    }

    /// bluetoothd stopped and started again (a stand-in owning org.bluez on the private bus) under
    /// an open central: while it is away a connect fails at once saying bluetoothd is not running,
    /// and until the new one answered `GetManagedObjects` that it is starting (both used to blame
    /// the adapter: "gone (removed or unplugged)"), and its return is reported
    /// (it used to pass in silence): the loss once, then the return and the adapter usable again,
    /// each a loss or a recovery, and the same lines in the log.
    @Test func bluetoothdLeavingAndComingBackIsReported() async throws {
        let (daemon, address) = try await Self.startDaemon()
        // SIGKILL: a dbus-daemon left running would hold `swift test`'s output open (it ignored
        // SIGTERM here).
        defer {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
        var bluetoothd = try await StandInBluetoothd.start(address)
        let logged = Mutex<[String]>([]), changes = Mutex<[String]>([])
        var configuration = BlueZCentral.Configuration()
        configuration.log = { line in logged.withLock { $0.append(line) } }
        configuration.onChange = { line, trouble in changes.withLock { $0.append((trouble ? "loss: " : "recovery: ") + line) } }
        configuration.busAddress = address
        let central = try await BlueZCentral.open(configuration)
        #expect(central.adapterPath == "/org/bluez/hci0")

        bluetoothd.close()
        try await eventually("bluetoothd's leaving logged") { logged.withLock({ $0.contains { $0.hasPrefix("bluetoothd left the bus") } }) }
        let peer = DeviceAddress(0xC0_4E_47_00_00_01, kind: .random)
        do {
            _ = try await central.connect(peer, timeout: .seconds(30))
            Issue.record("connected without bluetoothd")
        } catch {
            #expect(!error.isFinal, "\(error)")
            #expect(error.description.hasPrefix("bluetoothd is not running"), "\(error)")
        }

        // The new bluetoothd answers GetManagedObjects only when told: until then it is starting.
        let held = Mutex<[@Sendable () -> Void]>([])
        bluetoothd = try await StandInBluetoothd.start(address, hold: { answer in held.withLock { $0.append(answer) } })
        defer { bluetoothd.close() }
        try await eventually("a held connection") { !held.withLock({ $0.isEmpty }) }
        do {
            _ = try await central.connect(peer, timeout: .seconds(30))
            Issue.record("connected before bluetoothd's objects were loaded")
        } catch {
            #expect(error.description.hasPrefix("bluetoothd is starting"), "\(error)")
        }
        for answer in held.withLock({ $0 }) { answer() }
        try await eventually("the adapter's recovery logged") { logged.withLock({ $0.contains { $0.hasPrefix("BlueZ adapter hci0 is usable again") } }) }
        let lines = logged.withLock { $0 }
        #expect(lines.contains { $0.hasPrefix("bluetoothd left the bus") }, "\(lines)")
        #expect(lines.contains("bluetoothd is back on the bus"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("BlueZ adapter hci0 is usable again") }, "\(lines)")
        #expect(!lines.contains { $0.contains("went down") }, "bluetoothd leaving is reported once, not again as the adapter: \(lines)")
        let reported = changes.withLock { $0 }
        #expect(reported == ["loss: bluetoothd left the bus; waiting for it to come back",
                             "recovery: bluetoothd is back on the bus",
                             "recovery: BlueZ adapter hci0 is usable again (powered, bluetoothd running)"], "\(reported)")
        await central.close()
    }

    /// A central opened to wait (as the daemon's driver opens it) before bluetoothd runs: `open`
    /// waits, saying so once; a bluetoothd without adapters: it says that and waits on; that one
    /// leaving and one with a powered hci0 arriving: `open` returns hci0 (it used to fail at once,
    /// and the daemon's supervisor retried with a delay growing to 5 minutes). A waiting open
    /// that is cancelled ends.
    /// The system bus not answering yet (dbus-daemon not started, or restarting after the daemon
    /// lost it): an open that waits says so once and goes on when the bus answers; one that does
    /// not wait fails at once, naming D-Bus. Before, the driver failed, and the daemon's
    /// supervisor restarted it with a delay growing to 5 minutes.
    @Test func aWaitingOpenWaitsForTheSystemBus() async throws {
        let place = try Self.busAddress()
        var configuration = BlueZCentral.Configuration()
        configuration.busAddress = place.1
        let refused = await Task { [configuration] () -> String? in
            do {
                let central = try await BlueZCentral.open(configuration)
                await central.close()
                return nil
            } catch {
                return "\(error)"
            }
        }.value
        #expect(refused?.contains("D-Bus") == true, "\(String(describing: refused))")
        let changes = Mutex<[String]>([])
        configuration.waitUntilUsable = true
        configuration.onChange = { line, trouble in changes.withLock { $0.append((trouble ? "loss: " : "recovery: ") + line) } }
        let opening = Task { [configuration] in try await BlueZCentral.open(configuration) }
        try await eventually("the missing bus reported") { changes.withLock { !$0.isEmpty } }
        let (daemon, address) = try await Self.startDaemon(at: place)
        defer {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
        try await eventually("the bus and the missing bluetoothd reported") { changes.withLock { $0.count >= 3 } }
        let bluetoothd = try await StandInBluetoothd.start(address)
        defer { bluetoothd.close() }
        let central = try await opening.value
        #expect(central.adapterPath == "/org/bluez/hci0")
        let said = changes.withLock { $0 }
        #expect(said.count == 5 && said.first?.hasPrefix("loss: the system bus does not answer (") == true
                && said.first?.hasSuffix("); waiting") == true, "\(said)")
        #expect(Array(said.dropFirst()) == [
            "recovery: the system bus answers",
            "loss: bluetoothd is not running; waiting",
            "recovery: bluetoothd is running",
            "recovery: BlueZ adapter hci0 is usable (powered, bluetoothd running)",
        ], "\(said)")
        await central.close()
    }

    @Test func aWaitingOpenWaitsForBluetoothdAndItsAdapter() async throws {
        let (daemon, address) = try await Self.startDaemon()
        defer {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
        let changes = Mutex<[String]>([])
        var configuration = BlueZCentral.Configuration()
        configuration.waitUntilUsable = true
        configuration.onChange = { line, trouble in changes.withLock { $0.append((trouble ? "loss: " : "recovery: ") + line) } }
        func waitForChanges(_ count: Int) async throws {
            try await eventually("\(count) changes reported") { changes.withLock({ $0.count >= count }) }
        }
        configuration.busAddress = address
        let opening = Task { [configuration] in try await BlueZCentral.open(configuration) }
        try await waitForChanges(1)
        var bluetoothd = try await StandInBluetoothd.start(address, objects: .dict([]))
        try await waitForChanges(3)
        bluetoothd.close()
        try await waitForChanges(4)
        bluetoothd = try await StandInBluetoothd.start(address)
        defer { bluetoothd.close() }
        let central = try await opening.value
        #expect(central.adapterPath == "/org/bluez/hci0")
        #expect(changes.withLock { $0 } == [
            "loss: bluetoothd is not running; waiting",
            "recovery: bluetoothd is running",
            "loss: BlueZ has no adapter; waiting",
            "loss: bluetoothd left the bus; waiting for it to come back",
            "recovery: bluetoothd is running",
            "recovery: BlueZ adapter hci0 is usable (powered, bluetoothd running)",
        ])
        await central.close()

        // Waiting for an adapter bluetoothd does not have, then cancelled.
        configuration.adapter = "hci7"
        let cancelled = Task { [configuration] in try await BlueZCentral.open(configuration) }
        try await waitForChanges(7)
        #expect(changes.withLock { $0.last } == "loss: BlueZ has no adapter hci7; waiting")
        cancelled.cancel()
        do {
            _ = try await cancelled.value
            Issue.record("a cancelled open returned a central")
        } catch let error as BLEError {
            #expect(error == .cancelled, "\(error)")
        }
    }

    /// The bus lost with a subscribed heart-rate link: what bluetoothd writes into the
    /// AcquireNotify socket after healthgate noticed the loss (it was still delivering; it exits
    /// right after) reaches the stream (they used to be dropped with the bus: the socket was
    /// closed at once, and the systemd scenario missed readings sent just before the bus went);
    /// a socket bluetoothd never closes is closed by healthgate after the grace.
    @Test func notificationsInFlightWhenTheBusGoesAreDelivered() async throws {
        let (daemon, address) = try await Self.startDaemon()
        defer {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
        // bluetoothd's end of the AcquireNotify socket.
        let bluetoothdEnd = Mutex<Int32>(-1)
        let methods: [String: StandInBluetoothd.Method] = [
            BlueZObjectTreeTests.device: { bus, call in bus.reply(call) },  // Connect: already connected
            BlueZObjectTreeTests.hrMeasurement: { bus, call in
                guard call.member == "AcquireNotify" else { return bus.replyError(call, "org.bluez.Error.NotSupported", call.member) }
                var pair: [Int32] = [-1, -1]
                guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                    return bus.replyError(call, "org.bluez.Error.Failed", "socketpair: \(errno)")
                }
                bluetoothdEnd.withLock { $0 = pair[0] }
                bus.reply(call, [.fd(pair[1]), .uint16(23)])  // sd-bus sent a copy
                close(pair[1])
            },
        ]
        let bluetoothd = try await StandInBluetoothd.start(address, objects: BlueZObjectTreeTests.managedObjects, methods: methods)
        defer { bluetoothd.close() }
        let logged = Mutex<[String]>([])
        var configuration = BlueZCentral.Configuration()
        configuration.log = { line in logged.withLock { $0.append(line) } }
        configuration.busAddress = address
        let central = try await BlueZCentral.open(configuration)

        let peer = DeviceAddress(0xC0_4E_47_00_00_01, kind: .random)
        let link = try await central.connect(peer, timeout: .seconds(30))
        _ = try await link.discover(timeout: .seconds(30))
        let (values, sink) = AsyncStream.makeStream(of: GATTNotification.self)
        try await link.subscribe(BluetoothUUID(0x2A37), into: sink, timeout: .seconds(30))
        let fd = bluetoothdEnd.withLock { $0 }
        try #require(fd >= 0)
        func deliver(_ bpm: UInt8) -> Int { [0x00, bpm].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        let received = Mutex<[[UInt8]]>([])
        let reader = Task { @Sendable in for await n in values { received.withLock { $0.append(n.value) } } }
        func waitFor(_ count: Int) async throws {
            try await eventually("\(count) values received") { received.withLock({ $0.count >= count }) }
        }
        #expect(deliver(60) == 2)
        try await waitFor(1)
        #expect(received.withLock { $0 } == [[0x00, 60]])

        kill(daemon.processIdentifier, SIGKILL)
        daemon.waitUntilExit()
        try await eventually("the lost bus logged") { logged.withLock({ $0.contains { $0.hasPrefix("D-Bus connection lost") } }) }
        // The link has ended (the bus is gone); bluetoothd still writes what it held, then exits.
        _ = try? await link.disconnected(timeout: .seconds(30))
        #expect(deliver(61) == 2, "errno \(errno): the socket was closed with the bus")
        #expect(deliver(62) == 2, "errno \(errno)")
        try await waitFor(3)
        #expect(received.withLock { $0 } == [[0x00, 60], [0x00, 61], [0x00, 62]])
        // bluetoothd wedged, its end left open: healthgate closes its own after the grace.
        var hangUp = pollfd(fd: fd, events: 0, revents: 0)
        let started = ContinuousClock.now
        while poll(&hangUp, 1, 100) == 0, ContinuousClock.now - started < .seconds(30) {}
        #expect(hangUp.revents & Int16(POLLHUP) != 0, "healthgate's end is still open")
        close(fd)
        await central.close()
        sink.finish()
        await reader.value
    }
}

/// A stand-in for bluetoothd on a private bus: owns `org.bluez` and answers `GetManagedObjects`
/// with `objects` (default: one powered adapter, hci0) and the calls to the paths in `methods`;
/// `close` leaves the bus as a stopped bluetoothd does.
final class StandInBluetoothd {
    typealias Method = (SDBus, SDBus.MethodCall) -> Void
    let bus: SDBus

    private init(bus: SDBus) { self.bus = bus }

    static let adapterOnly = DBusValue.dict([DBusEntry(.objectPath(BlueZObjectTreeTests.adapter), BlueZObjectTreeTests.adapterInterfaces)])

    /// `hold`: given each answer to `GetManagedObjects` to send when it likes (default: at once).
    /// `methods`: by object path, answers to calls of other members (on the bus thread).
    static func start(_ address: String, objects: DBusValue = adapterOnly, methods: [String: Method] = [:],
                      hold: (@Sendable (@escaping @Sendable () -> Void) -> Void)? = nil) async throws -> StandInBluetoothd {
        let bus = try await BlueZBusLossTests.open(address)
        nonisolated(unsafe) let methods = methods
        let owned: Result<[DBusValue], DBusError> = await withCheckedContinuation { c in
            bus.post {
                do throws(DBusError) {
                    _ = try bus.exportObject("/") { call in
                        if call.member == "GetManagedObjects" {
                            guard let hold else { return bus.reply(call, [objects]) }
                            hold { bus.post { bus.reply(call, [objects]) } }
                        } else {
                            bus.replyError(call, "org.freedesktop.DBus.Error.UnknownMethod", call.member)
                        }
                    }
                    for (path, method) in methods { _ = try bus.exportObject(path) { call in method(bus, call) } }
                } catch {
                    return c.resume(returning: .failure(error))
                }
                bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                         [.string(BlueZ.service), .uint32(0)], timeout: .seconds(30)) { c.resume(returning: $0) }
            }
        }
        // 1: DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER
        guard case .success(let reply) = owned, reply.first == .uint32(1) else {
            bus.close()
            throw DBusError(name: "stand-in bluetoothd", message: "could not own org.bluez: \(owned)")
        }
        return StandInBluetoothd(bus: bus)
    }

    func close() { bus.close() }
}
