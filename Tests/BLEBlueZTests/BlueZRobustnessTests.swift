@testable import BLEBlueZ
import BLEHost
import BLERuntime
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
    /// Starts `dbus-daemon --session` on a fresh socket; returns the process and the address.
    static func startDaemon() throws -> (Process, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hg-dbus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let address = "unix:path=\(dir.path)/bus"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        p.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
        try p.run()
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: "\(dir.path)/bus") { usleep(50_000) }
        #expect(FileManager.default.fileExists(atPath: "\(dir.path)/bus"))
        return (p, address)
    }

    /// `SDBus.openSystem` reads `DBUS_SYSTEM_BUS_ADDRESS` when it opens the bus.
    static func open(_ address: String) async throws -> SDBus {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        return try await SDBus.openSystem()
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
        let (daemon, address) = try Self.startDaemon()
        defer { if daemon.isRunning { daemon.terminate() } }
        let bus = try await Self.open(address)
        defer { bus.close() }
        guard case .success(let id) = await Self.ping(bus) else { Issue.record("the private bus did not answer"); return }
        #expect(id.first?.string?.count == 32)

        let lost = Mutex<[String]>([])
        let state = BlueZCentral.State(bus: bus, log: { line in lost.withLock { $0.append(line) } })
        bus.post { bus.owner = state }
        // Nothing owns org.bluez here, so start fails (saying so), but it watches the bus.
        let started: Result<String, BLERuntimeError> = await withCheckedContinuation { c in
            bus.post { state.start(adapter: nil, BlueZCentral.Reply<String> { c.resume(returning: $0) }) }
        }
        guard case .failure(let error) = started else { Issue.record("start succeeded without bluetoothd"); return }
        #expect(error.description.contains("bluetoothd is not running"))

        kill(daemon.processIdentifier, SIGKILL)
        daemon.waitUntilExit()
        for _ in 0..<600 where !lost.withLock({ $0.contains { $0.hasPrefix("D-Bus connection lost") } }) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(lost.withLock { $0.contains { $0.hasPrefix("D-Bus connection lost") } })

        let peer = DeviceAddress(0xC0_4E_47_00_00_01, kind: .random)
        let connect: Result<String, BLERuntimeError> = await withCheckedContinuation { c in
            bus.post { state.connect(peer, timeout: .seconds(30), BlueZCentral.Reply<String> { c.resume(returning: $0) }) }
        }
        guard case .failure(let connectError) = connect else { Issue.record("connect succeeded without a bus"); return }
        #expect(connectError.isFinal, "\(connectError)")
        #expect(connectError.description.hasPrefix("the connection to the system bus was lost"))

        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveredDevice.self)
        let scan: Result<UInt64, BLERuntimeError> = await withCheckedContinuation { c in
            bus.post { state.startScan(continuation: continuation, filter: nil, BlueZCentral.Reply<UInt64> { c.resume(returning: $0) }) }
        }
        guard case .failure(let scanError) = scan else { Issue.record("a scan started without a bus"); return }
        #expect(scanError.isFinal)
        var yielded = 0
        for await _ in stream { yielded += 1 }
        #expect(yielded == 0)
    }
}
