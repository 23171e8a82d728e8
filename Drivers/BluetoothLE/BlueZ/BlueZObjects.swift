public import BluetoothCentral

/// BlueZ's D-Bus names.
public enum BlueZ {
    public static let service = "org.bluez"
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    public static let properties = "org.freedesktop.DBus.Properties"
}

/// A pure model of bluetoothd's object tree (`org.bluez` on the system bus): fed the answer to
/// `GetManagedObjects` and then the `InterfacesAdded`, `InterfacesRemoved` and
/// `PropertiesChanged` signals, it keeps every object's interfaces and properties and says what
/// changed. Typed views (`adapter`, `device`, `database`, ...) read it. No I/O.
public struct BlueZObjectTree: Sendable {
    /// Path -> interface -> property -> value.
    public private(set) var objects: [String: [String: [String: DBusValue]]] = [:]

    public enum Change: Equatable, Sendable {
        case added(path: String, interface: String)
        case removed(path: String, interface: String)
        /// Properties changed (or invalidated) on one interface.
        case changed(path: String, interface: String, keys: [String])
    }

    public init() {}

    /// Replaces everything with a `GetManagedObjects` answer (`a{oa{sa{sv}}}`).
    @discardableResult
    public mutating func load(managedObjects value: DBusValue) -> [Change] {
        var changes = clear()
        for (path, interfaces) in value.properties ?? [:] {
            changes += interfacesAdded(path: path, interfaces: interfaces)
        }
        return changes
    }

    /// `InterfacesAdded(o path, a{sa{sv}} interfaces)`.
    @discardableResult
    public mutating func interfacesAdded(path: String, interfaces value: DBusValue) -> [Change] {
        var changes: [Change] = []
        for (interface, properties) in (value.properties ?? [:]).sorted(by: { $0.key < $1.key }) {
            let props = properties.properties ?? [:]
            let existed = objects[path]?[interface] != nil
            objects[path, default: [:]][interface, default: [:]].merge(props) { _, new in new }
            changes.append(existed ? .changed(path: path, interface: interface, keys: props.keys.sorted())
                                   : .added(path: path, interface: interface))
        }
        return changes
    }

    /// `InterfacesRemoved(o path, as interfaces)`. An object left without interfaces is gone,
    /// and so is everything below it (a removed device takes its services along).
    @discardableResult
    public mutating func interfacesRemoved(path: String, interfaces: [String]) -> [Change] {
        var changes: [Change] = []
        for interface in interfaces where objects[path]?[interface] != nil {
            objects[path]?[interface] = nil
            changes.append(.removed(path: path, interface: interface))
        }
        if objects[path]?.isEmpty == true {
            objects[path] = nil
            for child in objects.keys.filter({ $0.hasPrefix(path + "/") }).sorted() {
                for interface in (objects[child] ?? [:]).keys.sorted() { changes.append(.removed(path: child, interface: interface)) }
                objects[child] = nil
            }
        }
        return changes
    }

    /// `PropertiesChanged(s interface, a{sv} changed, as invalidated)` of the object at `path`.
    /// Changes to an interface the tree does not know are ignored (its `InterfacesAdded` will
    /// carry them).
    @discardableResult
    public mutating func propertiesChanged(path: String, interface: String, changed: DBusValue, invalidated: [String]) -> [Change] {
        guard objects[path]?[interface] != nil else { return [] }
        let props = changed.properties ?? [:]
        objects[path]?[interface]?.merge(props) { _, new in new }
        for key in invalidated { objects[path]?[interface]?[key] = nil }
        let keys = (Array(props.keys) + invalidated).sorted()
        return keys.isEmpty ? [] : [.changed(path: path, interface: interface, keys: keys)]
    }

    /// Forgets everything (bluetoothd left the bus).
    @discardableResult
    public mutating func clear() -> [Change] {
        var changes: [Change] = []
        for path in objects.keys.sorted() {
            for interface in (objects[path] ?? [:]).keys.sorted() { changes.append(.removed(path: path, interface: interface)) }
        }
        objects = [:]
        return changes
    }

    public func property(_ path: String, _ interface: String, _ key: String) -> DBusValue? {
        objects[path]?[interface]?[key]
    }

    // MARK: Typed views

    public struct Adapter: Equatable, Sendable {
        public var path: String
        /// The last path component (`hci0`).
        public var name: String
        public var powered: Bool
        public var discovering: Bool
        /// The controller's own address (`Address`), which stays when its name changes.
        public var address: String?
    }

    public struct Device: Equatable, Sendable {
        public var path: String
        public var adapterPath: String
        public var address: DeviceAddress
        public var name: String?
        public var serviceUUIDs: [BluetoothUUID]
        public var rssi: Int?
        public var connected: Bool
        public var servicesResolved: Bool
        /// Advertised service data (`ServiceData`), manufacturer data (`ManufacturerData`), TX
        /// power (`TxPower`) and flags (`AdvertisingFlags`), as bluetoothd last heard them.
        public var serviceData: [AdvertisingData.ServiceData] = []
        public var manufacturerData: [AdvertisingData.ManufacturerData] = []
        public var txPower: Int?
        public var advertisingFlags: UInt8?

        /// As the scanner reports it (BlueZ does not say whether a device is connectable; every
        /// device it lists is offered).
        public var discovered: DiscoveredDevice {
            DiscoveredDevice(address: address, addressType: address.kind.rawValue, name: name, serviceUUIDs: serviceUUIDs,
                             rssi: rssi.map { Int8(clamping: $0) }, isConnectable: true, fromExtendedReport: false,
                             serviceData: serviceData, manufacturerData: manufacturerData,
                             txPower: txPower.map { Int8(clamping: $0) }, flags: advertisingFlags)
        }
    }

    public struct Characteristic: Equatable, Sendable {
        public var path: String
        public var servicePath: String
        public var uuid: BluetoothUUID
        public var flags: [String]
        /// True when BlueZ offers `AcquireNotify` for it (the property exists).
        public var offersAcquireNotify: Bool
        public var notifying: Bool
    }

    /// The adapters, by path.
    public var adapters: [Adapter] {
        objects.keys.sorted().compactMap { adapter(at: $0) }
    }

    public func adapter(at path: String) -> Adapter? {
        guard let p = objects[path]?[BlueZ.adapter] else { return nil }
        return Adapter(path: path, name: String(path.split(separator: "/").last ?? ""), powered: p["Powered"]?.bool ?? false,
                       discovering: p["Discovering"]?.bool ?? false, address: p["Address"]?.string?.uppercased())
    }

    /// The adapter named `name` (`hci1`), or the first one when nil.
    public func adapter(named name: String?) -> Adapter? {
        adapters.first { name == nil || $0.name == name }
    }

    public func device(at path: String) -> Device? {
        guard let p = objects[path]?[BlueZ.device], let text = p["Address"]?.string else { return nil }
        let kind: DeviceAddress.Kind = p["AddressType"]?.string == "random" ? .random : .public
        guard let address = DeviceAddress(text, kind: kind) else { return nil }
        let adapterPath = p["Adapter"]?.string ?? String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        return Device(path: path, adapterPath: adapterPath, address: address, name: p["Name"]?.string,
                      serviceUUIDs: (p["UUIDs"]?.strings ?? []).compactMap(BluetoothUUID.init),
                      rssi: p["RSSI"]?.int, connected: p["Connected"]?.bool ?? false,
                      servicesResolved: p["ServicesResolved"]?.bool ?? false,
                      serviceData: Self.serviceData(p["ServiceData"]), manufacturerData: Self.manufacturerData(p["ManufacturerData"]),
                      txPower: p["TxPower"]?.int, advertisingFlags: p["AdvertisingFlags"]?.bytes?.first)
    }

    /// `Device1.ServiceData` (`a{sv}`: UUID string -> bytes) in message order; entries with a
    /// UUID or value that does not parse are left out.
    public static func serviceData(_ value: DBusValue?) -> [AdvertisingData.ServiceData] {
        guard case .dict(let entries)? = value else { return [] }
        return entries.compactMap { e in
            guard let uuid = e.key.string.flatMap(BluetoothUUID.init), let bytes = e.value.bytes else { return nil }
            return AdvertisingData.ServiceData(uuid: uuid, data: bytes)
        }
    }

    /// `Device1.ManufacturerData` (`a{qv}`: company identifier -> bytes) in message order.
    public static func manufacturerData(_ value: DBusValue?) -> [AdvertisingData.ManufacturerData] {
        guard case .dict(let entries)? = value else { return [] }
        return entries.compactMap { e in
            guard let id = e.key.int, let company = UInt16(exactly: id), let bytes = e.value.bytes else { return nil }
            return AdvertisingData.ManufacturerData(companyIdentifier: company, data: bytes)
        }
    }

    /// The device with this address under the adapter at `adapterPath`.
    public func device(adapterPath: String, address: DeviceAddress) -> Device? {
        if let d = device(at: Self.devicePath(adapterPath: adapterPath, address: address)) { return d }
        return objects.keys.sorted().lazy.compactMap { device(at: $0) }
            .first { $0.adapterPath == adapterPath && $0.address.value == address.value }
    }

    /// BlueZ's path of a device: `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
    public static func devicePath(adapterPath: String, address: DeviceAddress) -> String {
        "\(adapterPath)/dev_" + address.text.replacingColons()
    }

    public func characteristic(at path: String) -> Characteristic? {
        guard let p = objects[path]?[BlueZ.gattCharacteristic], let uuid = p["UUID"]?.string.flatMap(BluetoothUUID.init) else {
            return nil
        }
        return Characteristic(path: path, servicePath: p["Service"]?.string ?? "", uuid: uuid, flags: p["Flags"]?.strings ?? [],
                              offersAcquireNotify: p["NotifyAcquired"] != nil, notifying: p["Notifying"]?.bool ?? false)
    }

    /// The characteristics of the device at `devicePath`, in handle order.
    public func characteristics(devicePath: String) -> [Characteristic] {
        objects.keys.filter { $0.hasPrefix(devicePath + "/") }.compactMap { characteristic(at: $0) }
            .sorted { (Self.handle(of: $0.path) ?? 0) < (Self.handle(of: $1.path) ?? 0) }
    }

    /// The GATT database of the device at `devicePath` as BlueZ resolved it. Handles come from
    /// the object paths (`service000a`, `char000b`: the declaration handles BlueZ names them by);
    /// a characteristic's value handle is the one after its declaration.
    public func database(devicePath: String) -> GATTDatabase {
        let servicePaths = objects.keys.filter { $0.hasPrefix(devicePath + "/") && objects[$0]?[BlueZ.gattService] != nil }
            .sorted { (Self.handle(of: $0) ?? 0) < (Self.handle(of: $1) ?? 0) }
        let all = characteristics(devicePath: devicePath)
        var services: [GATTService] = []
        for path in servicePaths {
            guard let uuid = property(path, BlueZ.gattService, "UUID")?.string.flatMap(BluetoothUUID.init) else { continue }
            let start = Self.handle(of: path) ?? 0
            let characteristics = all.filter { $0.servicePath == path }.map { c in
                let declaration = Self.handle(of: c.path) ?? 0
                return GATTCharacteristic(uuid: c.uuid, declarationHandle: declaration, valueHandle: declaration &+ 1,
                                          endHandle: declaration &+ 1, properties: Self.properties(flags: c.flags), descriptors: [])
            }
            services.append(GATTService(uuid: uuid, startHandle: start, endHandle: characteristics.last?.endHandle ?? start,
                                        characteristics: characteristics))
        }
        return GATTDatabase(services: services)
    }

    /// What a change did to the adapter in use.
    public enum AdapterTransition: Equatable, Sendable {
        /// Powered on again, or added back powered: links and discovery can start again.
        case up
        /// Powered off, or removed (a controller unplugged): every link on it is gone and
        /// discovery stopped.
        case down
    }

    /// What `change` (already applied to this tree) means for the adapter at `adapterPath`: nil
    /// when nothing that matters changed (another adapter, another property).
    public func adapterTransition(_ change: Change, adapterPath: String) -> AdapterTransition? {
        switch change {
        case .removed(adapterPath, BlueZ.adapter):
            return .down
        case .added(adapterPath, BlueZ.adapter):
            return adapter(at: adapterPath)?.powered == true ? .up : .down
        case .changed(adapterPath, BlueZ.adapter, let keys) where keys.contains("Powered"):
            return adapter(at: adapterPath)?.powered == true ? .up : .down
        default:
            return nil
        }
    }

    /// The adapter to use from now on instead of the one at `current`, after `change` (already
    /// applied): a controller unplugged and plugged back often returns under another name (hci0
    /// comes back as hci1). Only while the adapter at `current` is gone, only an adapter that was
    /// just added, and only the same controller (its `address`): another controller plugged in
    /// meanwhile is not taken over. Nil otherwise.
    public func replacementAdapter(after change: Change, current: String, address: String?) -> Adapter? {
        guard case .added(let path, BlueZ.adapter) = change, path != current, adapter(at: current) == nil,
              let added = adapter(at: path), let address, added.address == address.uppercased() else { return nil }
        return added
    }

    /// Why the adapter at `adapterPath` cannot be used now (absent or powered off), or nil.
    public func adapterUnusable(_ adapterPath: String) -> String? {
        let name = String(adapterPath.split(separator: "/").last ?? "")
        guard let adapter = adapter(at: adapterPath) else { return "BlueZ adapter \(name) is gone (removed or unplugged)" }
        return adapter.powered ? nil : "BlueZ adapter \(name) is powered off"
    }

    /// Whether a scan reports `device` again after `previous` (nil: not reported yet): when
    /// something it advertises changed (name, services, service or manufacturer data, TX power,
    /// flags); a new signal strength alone is no news.
    public static func isNews(_ device: DiscoveredDevice, after previous: DiscoveredDevice?) -> Bool {
        guard let previous else { return true }
        return previous.name != device.name || previous.serviceUUIDs != device.serviceUUIDs || previous.serviceData != device.serviceData
            || previous.manufacturerData != device.manufacturerData || previous.txPower != device.txPower || previous.flags != device.flags
    }

    /// The handle in a path's last component (`char000b` -> 0x000b).
    public static func handle(of path: String) -> UInt16? {
        guard let last = path.split(separator: "/").last else { return nil }
        for prefix in ["service", "char", "desc"] where last.hasPrefix(prefix) {
            let digits = last.dropFirst(prefix.count)
            guard digits.count == 4 else { return nil }
            return UInt16(digits, radix: 16)
        }
        return nil
    }

    /// GATT characteristic properties (the declaration's bit field) from BlueZ's `Flags`.
    public static func properties(flags: [String]) -> UInt8 {
        var bits: UInt8 = 0
        for flag in flags {
            switch flag {
            case "broadcast": bits |= 0x01
            case "read": bits |= 0x02
            case "write-without-response": bits |= 0x04
            case "write": bits |= 0x08
            case "notify": bits |= 0x10
            case "indicate": bits |= 0x20
            case "authenticated-signed-writes": bits |= 0x40
            case "extended-properties": bits |= 0x80
            default: break
            }
        }
        return bits
    }

    /// A UUID as BlueZ writes it: 36 characters, lower case.
    public static func uuidString(_ uuid: BluetoothUUID) -> String {
        let hex = uuid.bytes128.reversed().map { b in String(b, radix: 16).leftPadded(to: 2) }.joined()
        let h = Array(hex)
        return [h[0..<8], h[8..<12], h[12..<16], h[16..<20], h[20..<32]].map { String($0) }.joined(separator: "-")
    }

    /// The `SetDiscoveryFilter` argument: LE only, and the given services when there are some
    /// (bluetoothd then reports only devices advertising one of them).
    public static func discoveryFilter(services: [BluetoothUUID]?) -> DBusValue {
        var entries = [DBusEntry(.string("Transport"), .string("le"))]
        if let services, !services.isEmpty {
            entries.append(DBusEntry(.string("UUIDs"), .array(services.map { .string(uuidString($0)) })))
        }
        return .dict(entries)
    }
}

extension String {
    fileprivate func replacingColons() -> String { String(map { $0 == ":" ? "_" : $0 }) }
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
