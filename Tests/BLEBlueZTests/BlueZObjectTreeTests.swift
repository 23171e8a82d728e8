import BluetoothCentral
import BLEBlueZ
import BLEHost
import BLERuntime
import Foundation
import Testing

/// The pure model of bluetoothd's object tree, fed message contents built here (the shapes
/// bluetoothd 5.66 sends: `a{oa{sa{sv}}}` from GetManagedObjects, `(o, a{sa{sv}})` from
/// InterfacesAdded, `(o, as)` from InterfacesRemoved, `(s, a{sv}, as)` from PropertiesChanged).
struct BlueZObjectTreeTests {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_C0_4E_47_00_00_01"
    static let hrService = device + "/service000a"
    static let hrMeasurement = hrService + "/char000b"
    static let location = hrService + "/char000e"
    static let batteryService = device + "/service0010"
    static let batteryLevel = batteryService + "/char0011"

    static func props(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dict(pairs.map { DBusEntry(.string($0.0), $0.1) })
    }

    static func interfaces(_ pairs: [(String, DBusValue)]) -> DBusValue { props(pairs) }

    static func strings(_ s: [String]) -> DBusValue { .array(s.map { .string($0) }) }

    static let adapterInterfaces = interfaces([
        (BlueZ.adapter, props([("Address", .string("00:00:00:00:00:00")), ("Powered", .bool(true)), ("Discovering", .bool(false))])),
        ("org.freedesktop.DBus.Properties", props([])),
    ])

    static func deviceInterfaces(connected: Bool = false, resolved: Bool = false) -> DBusValue {
        interfaces([(BlueZ.device, props([
            ("Address", .string("C0:4E:47:00:00:01")), ("AddressType", .string("random")), ("Name", .string("HG-HR")),
            ("Alias", .string("HG-HR")), ("Adapter", .objectPath(adapter)), ("RSSI", .int16(-52)),
            ("UUIDs", strings(["0000180d-0000-1000-8000-00805f9b34fb", "0000180f-0000-1000-8000-00805f9b34fb"])),
            ("Connected", .bool(connected)), ("ServicesResolved", .bool(resolved)),
        ]))])
    }

    static func service(_ uuid: String) -> DBusValue {
        interfaces([(BlueZ.gattService, props([("UUID", .string(uuid)), ("Device", .objectPath(device)), ("Primary", .bool(true))]))])
    }

    static func characteristic(_ uuid: String, service: String, flags: [String], acquire: Bool) -> DBusValue {
        var p: [(String, DBusValue)] = [("UUID", .string(uuid)), ("Service", .objectPath(service)), ("Flags", strings(flags)),
                                        ("Value", .bytes([]))]
        if acquire { p.append(("NotifyAcquired", .bool(false))) }
        return interfaces([(BlueZ.gattCharacteristic, props(p))])
    }

    static let managedObjects = DBusValue.dict([
        DBusEntry(.objectPath(adapter), adapterInterfaces),
        DBusEntry(.objectPath(device), deviceInterfaces(connected: true, resolved: true)),
        DBusEntry(.objectPath(hrService), service("0000180d-0000-1000-8000-00805f9b34fb")),
        DBusEntry(.objectPath(hrMeasurement), characteristic("00002a37-0000-1000-8000-00805f9b34fb", service: hrService,
                                                            flags: ["notify"], acquire: true)),
        DBusEntry(.objectPath(location), characteristic("00002a38-0000-1000-8000-00805f9b34fb", service: hrService,
                                                       flags: ["read"], acquire: false)),
        DBusEntry(.objectPath(batteryService), service("0000180f-0000-1000-8000-00805f9b34fb")),
        DBusEntry(.objectPath(batteryLevel), characteristic("00002a19-0000-1000-8000-00805f9b34fb", service: batteryService,
                                                           flags: ["read", "indicate"], acquire: false)),
    ])

    @Test func managedObjectsGiveAdapterDeviceAndDatabase() throws {
        var tree = BlueZObjectTree()
        let changes = tree.load(managedObjects: Self.managedObjects)
        #expect(changes.count == 8)  // the adapter's two interfaces, then one per object
        #expect(changes.contains(.added(path: Self.device, interface: BlueZ.device)))

        let adapter = try #require(tree.adapter(named: nil))
        #expect(adapter.path == Self.adapter && adapter.name == "hci0" && adapter.powered && !adapter.discovering)
        #expect(tree.adapter(named: "hci0") == adapter)
        #expect(tree.adapter(named: "hci1") == nil)

        let device = try #require(tree.device(at: Self.device))
        #expect(device.address == DeviceAddress("C0:4E:47:00:00:01", kind: .random))
        #expect(device.address.kind == .random)
        #expect(device.adapterPath == Self.adapter)
        #expect(device.name == "HG-HR")
        #expect(device.rssi == -52)
        #expect(device.connected && device.servicesResolved)
        #expect(device.serviceUUIDs == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        let discovered = device.discovered
        #expect(discovered.addressType == 1 && discovered.isConnectable && discovered.rssi == -52 && discovered.name == "HG-HR")
        #expect(tree.device(adapterPath: Self.adapter, address: DeviceAddress("C0:4E:47:00:00:01")!)?.path == Self.device)

        let database = tree.database(devicePath: Self.device)
        #expect(database.services.map(\.uuid) == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        #expect(database.services.map(\.startHandle) == [0x0A, 0x10])
        let hr = try #require(database.characteristics(BluetoothUUID(0x2A37)).first)
        #expect(hr.declarationHandle == 0x0B && hr.valueHandle == 0x0C && hr.canNotify && !hr.canRead)
        let location = try #require(database.characteristics(BluetoothUUID(0x2A38)).first)
        #expect(location.canRead && !location.canNotify && location.valueHandle == 0x0F)
        let battery = try #require(database.characteristics(BluetoothUUID(0x2A19)).first)
        #expect(battery.canRead && battery.canIndicate && !battery.canNotify)

        let characteristics = tree.characteristics(devicePath: Self.device)
        #expect(characteristics.map(\.path) == [Self.hrMeasurement, Self.location, Self.batteryLevel])
        #expect(characteristics.map(\.offersAcquireNotify) == [true, false, false])
    }

    @Test func signalsAddChangeAndRemove() throws {
        var tree = BlueZObjectTree()
        tree.load(managedObjects: .dict([DBusEntry(.objectPath(Self.adapter), Self.adapterInterfaces)]))
        #expect(tree.device(at: Self.device) == nil)

        #expect(tree.interfacesAdded(path: Self.device, interfaces: Self.deviceInterfaces())
                == [.added(path: Self.device, interface: BlueZ.device)])
        #expect(tree.device(at: Self.device)?.connected == false)

        // Connected, then an RSSI that is invalidated (bluetoothd does so when discovery stops).
        #expect(tree.propertiesChanged(path: Self.device, interface: BlueZ.device,
                                       changed: Self.props([("Connected", .bool(true)), ("RSSI", .int16(-40))]), invalidated: [])
                == [.changed(path: Self.device, interface: BlueZ.device, keys: ["Connected", "RSSI"])])
        #expect(tree.device(at: Self.device)?.connected == true)
        #expect(tree.device(at: Self.device)?.rssi == -40)
        #expect(tree.propertiesChanged(path: Self.device, interface: BlueZ.device, changed: Self.props([]), invalidated: ["RSSI"])
                == [.changed(path: Self.device, interface: BlueZ.device, keys: ["RSSI"])])
        #expect(tree.device(at: Self.device)?.rssi == nil)

        // An interface the tree has not seen added is not invented from a PropertiesChanged.
        #expect(tree.propertiesChanged(path: Self.hrMeasurement, interface: BlueZ.gattCharacteristic,
                                       changed: Self.props([("Value", .bytes([0, 60]))]), invalidated: []) == [])
        #expect(tree.objects[Self.hrMeasurement] == nil)

        tree.interfacesAdded(path: Self.hrService, interfaces: Self.service("0000180d-0000-1000-8000-00805f9b34fb"))
        tree.interfacesAdded(path: Self.hrMeasurement, interfaces: Self.characteristic(
            "00002a37-0000-1000-8000-00805f9b34fb", service: Self.hrService, flags: ["notify"], acquire: true))
        #expect(tree.propertiesChanged(path: Self.hrMeasurement, interface: BlueZ.gattCharacteristic,
                                       changed: Self.props([("Value", .bytes([0, 60])), ("Notifying", .bool(true))]), invalidated: [])
                == [.changed(path: Self.hrMeasurement, interface: BlueZ.gattCharacteristic, keys: ["Notifying", "Value"])])
        #expect(tree.property(Self.hrMeasurement, BlueZ.gattCharacteristic, "Value") == .bytes([0, 60]))
        #expect(tree.characteristic(at: Self.hrMeasurement)?.notifying == true)

        // The device vanishes: its services and characteristics go with it, children included
        // even when bluetoothd's removal of them has not arrived.
        let removed = tree.interfacesRemoved(path: Self.device, interfaces: [BlueZ.device])
        #expect(removed == [.removed(path: Self.device, interface: BlueZ.device),
                            .removed(path: Self.hrService, interface: BlueZ.gattService),
                            .removed(path: Self.hrMeasurement, interface: BlueZ.gattCharacteristic)])
        #expect(tree.objects.keys.sorted() == [Self.adapter])
        #expect(tree.interfacesRemoved(path: Self.device, interfaces: [BlueZ.device]) == [])

        // Removing one of two interfaces keeps the object.
        #expect(tree.interfacesRemoved(path: Self.adapter, interfaces: ["org.freedesktop.DBus.Properties"])
                == [.removed(path: Self.adapter, interface: "org.freedesktop.DBus.Properties")])
        #expect(tree.adapter(at: Self.adapter) != nil)

        #expect(tree.clear() == [.removed(path: Self.adapter, interface: BlueZ.adapter)])
        #expect(tree.adapters.isEmpty)
    }

    @Test func interfacesAddedForAKnownInterfaceMergesProperties() {
        var tree = BlueZObjectTree()
        tree.interfacesAdded(path: Self.device, interfaces: Self.deviceInterfaces())
        let again = tree.interfacesAdded(path: Self.device, interfaces: Self.interfaces([(BlueZ.device, Self.props([("Name", .string("Renamed"))]))]))
        #expect(again == [.changed(path: Self.device, interface: BlueZ.device, keys: ["Name"])])
        #expect(tree.device(at: Self.device)?.name == "Renamed")
        #expect(tree.device(at: Self.device)?.address.text == "C0:4E:47:00:00:01")
    }

    @Test func addressesAndPaths() throws {
        let address = try #require(DeviceAddress("C0:4E:47:00:00:01"))
        #expect(BlueZObjectTree.devicePath(adapterPath: "/org/bluez/hci1", address: address) == "/org/bluez/hci1/dev_C0_4E_47_00_00_01")
        // A public address, and a device whose Address does not parse (no Device is made of it).
        var tree = BlueZObjectTree()
        tree.interfacesAdded(path: "/org/bluez/hci0/dev_00_1A_7D_DA_71_13", interfaces: Self.interfaces([(BlueZ.device, Self.props([
            ("Address", .string("00:1a:7d:da:71:13")), ("AddressType", .string("public")),
        ]))]))
        let device = try #require(tree.device(at: "/org/bluez/hci0/dev_00_1A_7D_DA_71_13"))
        #expect(device.address.kind == .public && device.address.text == "00:1A:7D:DA:71:13")
        #expect(device.adapterPath == "/org/bluez/hci0")  // from the path when Adapter is missing
        #expect(device.discovered.addressType == 0)
        tree.interfacesAdded(path: "/org/bluez/hci0/dev_bad", interfaces: Self.interfaces([(BlueZ.device, Self.props([
            ("Address", .string("not an address")),
        ]))]))
        #expect(tree.device(at: "/org/bluez/hci0/dev_bad") == nil)

        #expect(BlueZObjectTree.handle(of: "/org/bluez/hci0/dev_X/service000a/char000b") == 0x0B)
        #expect(BlueZObjectTree.handle(of: "/org/bluez/hci0/dev_X/service001f") == 0x1F)
        #expect(BlueZObjectTree.handle(of: "/org/bluez/hci0/dev_X/service000a/char000b/desc000d") == 0x0D)
        #expect(BlueZObjectTree.handle(of: "/org/bluez/hci0/dev_X") == nil)
        #expect(BlueZObjectTree.handle(of: "/org/bluez/hci0/dev_X/charzzzz") == nil)
    }

    @Test func uuidsAndFlags() throws {
        #expect(BlueZObjectTree.uuidString(BluetoothUUID(0x180D)) == "0000180d-0000-1000-8000-00805f9b34fb")
        let long = try #require(BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e"))
        #expect(BlueZObjectTree.uuidString(long) == "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        #expect(BluetoothUUID(BlueZObjectTree.uuidString(BluetoothUUID(0x2A37))) == BluetoothUUID(0x2A37))
        #expect(BlueZObjectTree.properties(flags: ["read", "notify"]) == 0x12)
        #expect(BlueZObjectTree.properties(flags: ["broadcast", "read", "write-without-response", "write", "notify", "indicate",
                                                   "authenticated-signed-writes", "extended-properties"]) == 0xFF)
        #expect(BlueZObjectTree.properties(flags: ["reliable-write", "encrypt-read"]) == 0)
    }

    @Test func discoveryFilter() {
        #expect(BlueZObjectTree.discoveryFilter(services: nil) == .dict([DBusEntry(.string("Transport"), .string("le"))]))
        #expect(BlueZObjectTree.discoveryFilter(services: []) == .dict([DBusEntry(.string("Transport"), .string("le"))]))
        #expect(BlueZObjectTree.discoveryFilter(services: [BluetoothUUID(0x180D), BluetoothUUID(0x1816)]) == .dict([
            DBusEntry(.string("Transport"), .string("le")),
            DBusEntry(.string("UUIDs"), .array([.string("0000180d-0000-1000-8000-00805f9b34fb"),
                                                .string("00001816-0000-1000-8000-00805f9b34fb")])),
        ]))
    }

    @Test func controllerSelection() throws {
        #expect(try BLEController(parsing: "bluez") == .bluez(adapter: nil))
        #expect(try BLEController(parsing: "bluez:hci1") == .bluez(adapter: "hci1"))
        #expect(try BLEController(parsing: "hci0") == .host(.hci(index: 0)))
        #expect(try BLEController(parsing: "tcp:127.0.0.1:9000") == .host(.tcp(host: "127.0.0.1", port: 9000)))
        #expect(BLEController.bluez(adapter: "hci1").description == "bluez:hci1")
        #expect(BLEController.bluez(adapter: nil).description == "bluez")
        for bad in ["bluez:", "bluez:hci", "bluez:wlan0", "bluez:hci-1", "bluez:hci99999"] {
            #expect(throws: TransportAddressError.self, "\(bad)") { try BLEController(parsing: bad) }
        }
        let error = #expect(throws: TransportAddressError.self) { try BLEController(parsing: "bluetooth") }
        #expect(error?.description.contains("bluez[:hci<N>]") == true)
    }

    @Test func valueAccessors() {
        #expect(DBusValue.objectPath("/a").string == "/a")
        #expect(DBusValue.array([.byte(1), .byte(2)]).bytes == [1, 2])
        #expect(DBusValue.array([.byte(1), .string("x")]).bytes == nil)
        #expect(DBusValue.uint64(UInt64.max).int == nil)
        #expect(DBusValue.int16(-5).int == -5)
        #expect(DBusValue.array([]).properties == [:])
        #expect(DBusValue.dict([DBusEntry(.uint16(1), .bool(true))]).properties == nil)
    }
}

/// `auto`: BlueZ when bluetoothd runs, else the lowest-numbered adapter the kernel lists.
struct AutoControllerTests {
    @Test func autoPicksBlueZWhenItRunsElseTheFirstAdapter() throws {
        #expect(try BLEController(parsing: "auto") == .auto)
        #expect(BLEController.auto.description == "auto")
        #expect(BLEController.auto.resolved(bluezRunning: true, adapters: ["hci0"]) == .bluez(adapter: nil))
        #expect(BLEController.auto.resolved(bluezRunning: true, adapters: []) == .bluez(adapter: nil))
        #expect(BLEController.auto.resolved(bluezRunning: false, adapters: ["hci10", "hci2", "hci1"]) == .host(.hci(index: 1)))
        #expect(BLEController.auto.resolved(bluezRunning: false, adapters: ["hcix", "other"]) == nil)
        #expect(BLEController.auto.resolved(bluezRunning: false, adapters: []) == nil)
        // Anything but auto stays as it is.
        #expect(BLEController.host(.hci(index: 3)).resolved(bluezRunning: true, adapters: ["hci0"]) == .host(.hci(index: 3)))
        #expect(BLEController.bluez(adapter: "hci1").resolved(bluezRunning: false, adapters: []) == .bluez(adapter: "hci1"))
    }
}
