public struct GATTDescriptor: Equatable, Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID

    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

public struct GATTCharacteristic: Equatable, Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    /// Last handle of the characteristic (its descriptors end here).
    public var endHandle: UInt16
    /// Property bits: 0x02 read, 0x04 write without response, 0x08 write, 0x10 notify, 0x20 indicate.
    public var properties: UInt8
    public var descriptors: [GATTDescriptor]

    public var canRead: Bool { properties & 0x02 != 0 }
    public var canNotify: Bool { properties & 0x10 != 0 }
    public var canIndicate: Bool { properties & 0x20 != 0 }
    public var cccdHandle: UInt16? { descriptors.first { $0.uuid == .clientCharacteristicConfiguration }?.handle }

    public init(uuid: BluetoothUUID, declarationHandle: UInt16, valueHandle: UInt16, endHandle: UInt16,
                properties: UInt8, descriptors: [GATTDescriptor]) {
        self.uuid = uuid
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
        self.properties = properties
        self.descriptors = descriptors
    }
}

public struct GATTService: Equatable, Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var startHandle: UInt16
    public var endHandle: UInt16
    public var characteristics: [GATTCharacteristic]

    public init(uuid: BluetoothUUID, startHandle: UInt16, endHandle: UInt16, characteristics: [GATTCharacteristic]) {
        self.uuid = uuid
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.characteristics = characteristics
    }
}

/// The peer's attribute database as discovered.
public struct GATTDatabase: Equatable, Sendable {
    public var services: [GATTService]

    public init(services: [GATTService]) { self.services = services }

    public var characteristics: [GATTCharacteristic] { services.flatMap(\.characteristics) }

    public func characteristics(_ uuid: BluetoothUUID) -> [GATTCharacteristic] { characteristics.filter { $0.uuid == uuid } }

    /// The characteristic whose value handle this is (for notifications).
    public func characteristic(valueHandle: UInt16) -> GATTCharacteristic? {
        characteristics.first { $0.valueHandle == valueHandle }
    }
}

public enum GATTSubscriptionMode: UInt16, Sendable, Equatable {
    case notify = 0x0001
    case indicate = 0x0002
}

public enum GATTDiscoveryError: Error, Equatable, Sendable {
    case disconnected
    /// An ATT error where discovery cannot go on.
    case peer(ATTErrorCode, handle: UInt16)
    case timeout
    /// The peer's answers make no progress or contradict themselves.
    case protocolViolation(String)
    case tooManyAttributes(limit: Int)
}
