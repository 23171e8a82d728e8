public import Foundation
public import Timing

/// Errors of the runtime's API. Every wait on the controller or the peer is bounded: a missing
/// answer becomes one of these, and the runtime carries on.
public enum BLEError: Error, Equatable, Sendable, CustomStringConvertible {
    /// True for the errors after which no call on the central can succeed: `closed`,
    /// `notStarted`, `backendLost`.
    public var isFinal: Bool {
        switch self {
        case .closed, .notStarted, .backendLost: true
        default: false
        }
    }

    /// The transport closed (or `close()` was called).
    case closed
    case notStarted
    case commandTimedOut(HCIOpcode)
    case commandFailed(HCIOpcode, HCIStatus)
    case commandQueueFull
    /// A command's reply decoded to something else than expected (or did not decode).
    case unexpectedReply(HCIOpcode, String)
    case connectTimedOut(DeviceAddress)
    /// The calling task was cancelled.
    case cancelled
    case connectionFailed(DeviceAddress, HCIStatus)
    /// The link is down (with the reason when it is known).
    case disconnected(HCIStatus?)
    /// A GATT operation got no answer in time.
    case timedOut(String)
    case att(ATTErrorCode, handle: UInt16)
    case discovery(GATTDiscoveryError)
    case notDiscovered
    case characteristicNotFound(BluetoothUUID)
    case cannotSubscribe(BluetoothUUID, String)
    case request(String)
    case transport(TransportError)
    /// The BlueZ backend: bluetoothd or the system bus refused or failed (the message says which).
    case bluez(String)
    /// The backend is gone for good (the connection to the system bus was lost): nothing can
    /// succeed any more; the message says why. Whoever runs the central must open a new one.
    case backendLost(String)

    public var description: String {
        switch self {
        case .closed: "transport closed"
        case .notStarted: "host not started"
        case .commandTimedOut(let op): "HCI command \(op) got no answer"
        case .commandFailed(let op, let status): "HCI command \(op) failed with status \(status)"
        case .commandQueueFull: "HCI command queue full"
        case .unexpectedReply(let op, let what): "HCI command \(op): unexpected reply \(what)"
        case .connectTimedOut(let a): "connecting to \(a) timed out"
        case .cancelled: "cancelled"
        case .connectionFailed(let a, let s): "connecting to \(a) failed with status \(s)"
        case .disconnected(let r): "disconnected" + (r.map { " (reason \($0))" } ?? "")
        case .timedOut(let what): "\(what) timed out"
        case .att(let code, let handle): "ATT error \(code) on handle 0x\(String(handle, radix: 16))"
        case .discovery(let e): "GATT discovery failed: \(e)"
        case .notDiscovered: "GATT database not discovered yet"
        case .characteristicNotFound(let u): "characteristic \(u) not found"
        case .cannotSubscribe(let u, let why): "cannot subscribe to \(u): \(why)"
        case .request(let why): "ATT request refused: \(why)"
        case .transport(let e): e.description
        case .bluez(let why): why
        case .backendLost(let why): why
        }
    }
}

/// A device seen while scanning; reports of one address are merged (name from the scan
/// response, service UUIDs united) and yielded again only when something new was learned.
public struct DiscoveredDevice: Equatable, Sendable {
    public var address: DeviceAddress
    /// The HCI address type of the report (0 public, 1 random, 2/3 identity).
    public var addressType: UInt8
    public var name: String?
    public var serviceUUIDs: [BluetoothUUID]
    public var rssi: Int8?
    public var isConnectable: Bool
    /// True when the device was reported with an LE Extended Advertising Report (0x0D).
    public var fromExtendedReport: Bool
    public var serviceData: [AdvertisingData.ServiceData]
    public var manufacturerData: [AdvertisingData.ManufacturerData]
    /// The advertised TX power level (dBm), when the device sends one.
    public var txPower: Int8?
    /// The advertised Flags byte (discoverable mode, BR/EDR support), when known.
    public var flags: UInt8?

    public init(address: DeviceAddress, addressType: UInt8, name: String?, serviceUUIDs: [BluetoothUUID], rssi: Int8?,
                isConnectable: Bool, fromExtendedReport: Bool, serviceData: [AdvertisingData.ServiceData] = [],
                manufacturerData: [AdvertisingData.ManufacturerData] = [], txPower: Int8? = nil, flags: UInt8? = nil) {
        self.address = address
        self.addressType = addressType
        self.name = name
        self.serviceUUIDs = serviceUUIDs
        self.rssi = rssi
        self.isConnectable = isConnectable
        self.fromExtendedReport = fromExtendedReport
        self.serviceData = serviceData
        self.manufacturerData = manufacturerData
        self.txPower = txPower
        self.flags = flags
    }
}

/// One notification or indication value.
public struct GATTNotification: Equatable, Sendable {
    public var peer: DeviceAddress
    public var characteristic: BluetoothUUID
    public var valueHandle: UInt16
    public var value: [UInt8]
    /// Wall-clock receive time.
    public var receivedAt: Date

    public init(peer: DeviceAddress, characteristic: BluetoothUUID, valueHandle: UInt16, value: [UInt8], receivedAt: Date) {
        self.peer = peer
        self.characteristic = characteristic
        self.valueHandle = valueHandle
        self.value = value
        self.receivedAt = receivedAt
    }
}

extension Backoff {
    /// Reconnect delays of a device session: from half a second doubling up to 30 s, each moved
    /// by up to ±20 % so that many sessions do not retry in step.
    public static let reconnect = Backoff(initial: .milliseconds(500), multiplier: 2, maximum: .seconds(30), jitter: 0.2)
}
