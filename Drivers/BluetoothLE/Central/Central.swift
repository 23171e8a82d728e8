
/// A Bluetooth LE central: what the recorder, the device sessions and the `ble` commands need from
/// a backend. Two implement it: HealthGate's own host stack (`HostRuntime`, a controller taken
/// over through the HCI user channel or an H4 link) and BlueZ over D-Bus (`BlueZCentral`, target
/// `BLEBlueZ`), which shares the adapter with the system's bluetoothd.
public protocol BLECentral: AnyObject, Sendable {
    /// The serial executor the central's device sessions run on.
    nonisolated var unownedExecutor: UnownedSerialExecutor { get }

    /// Scans for `duration`; the stream yields each device once, and again when it learns a name
    /// or service UUIDs. Ending the iteration early stops the scan.
    func scan(for duration: Duration) async throws(BLEError) -> AsyncStream<DiscoveredDevice>

    /// Connects to `peer`, bounded by `timeout`.
    func connect(_ peer: DeviceAddress, timeout: Duration) async throws(BLEError) -> any BLEConnection

    /// Ends every link and releases the controller or adapter; nothing succeeds afterwards.
    func close() async
}

/// One LE link to a peripheral, as a GATT client. After the link went down every call fails with
/// `BLEError.disconnected`.
public protocol BLEConnection: AnyObject, Sendable {
    var peer: DeviceAddress { get }

    /// The peer's services and characteristics.
    func discover(timeout: Duration) async throws(BLEError) -> GATTDatabase

    /// Reads a characteristic value. Needs `discover` first.
    func read(_ characteristic: BluetoothUUID, timeout: Duration) async throws(BLEError) -> [UInt8]

    /// Writes a characteristic value with a response (a Write Request). Needs `discover` first.
    func write(_ characteristic: BluetoothUUID, _ value: [UInt8], timeout: Duration) async throws(BLEError)

    /// Enables notifications (or indications when that is all the characteristic offers); the
    /// values go to `continuation`, which stays open when the link ends (a session feeds one
    /// stream across reconnections).
    func subscribe(_ characteristic: BluetoothUUID, into continuation: AsyncStream<GATTNotification>.Continuation,
                   timeout: Duration) async throws(BLEError)

    /// Disconnects and waits for the link to go down; returns the reason when it is known.
    @discardableResult
    func disconnect(timeout: Duration) async throws(BLEError) -> HCIStatus?

    /// Waits until the link goes down and returns the reason when it is known. Without a timeout
    /// it waits as long as the link lives.
    func disconnected(timeout: Duration?) async throws(BLEError) -> HCIStatus?
}

/// Which backend records: HealthGate's own host stack on a controller, or BlueZ.
///
///     hci0, tcp:HOST:PORT, unix:PATH, serial:PATH[:BAUD]   the own host stack (`TransportAddress`)
///     bluez                                                 bluetoothd's first adapter, over D-Bus
///     bluez:hci1                                            bluetoothd's adapter hci1
///     auto                                                  BlueZ when bluetoothd runs, else the first hciN
public enum BLEController: Hashable, Sendable, CustomStringConvertible {
    case host(TransportAddress)
    /// BlueZ; `adapter` is the adapter's name (`hci1`), nil for the first one.
    case bluez(adapter: String?)
    /// Decided when the controller is opened (`Controllers.resolve` in BLEDriver).
    case auto

    public init(parsing text: String) throws(TransportAddressError) {
        if text == "auto" {
            self = .auto
        } else if text == "bluez" {
            self = .bluez(adapter: nil)
        } else if text.hasPrefix("bluez:") {
            let name = text.dropFirst("bluez:".count)
            guard name.hasPrefix("hci"), case let digits = name.dropFirst(3), !digits.isEmpty,
                  digits.allSatisfy({ $0.isASCII && $0.isNumber }), UInt16(digits) != nil else {
                throw TransportAddressError(text, "expected bluez or bluez:hci<N> (a BlueZ adapter such as bluez:hci1)")
            }
            self = .bluez(adapter: String(name))
        } else {
            self = .host(try TransportAddress(parsing: text))
        }
    }

    public var description: String {
        switch self {
        case .host(let address): address.description
        case .bluez(let adapter): adapter.map { "bluez:\($0)" } ?? "bluez"
        case .auto: "auto"
        }
    }

    /// What `auto` means here: BlueZ when bluetoothd owns `org.bluez` on the system bus (it owns
    /// the adapters then), else the first adapter the kernel lists for the own host stack; nil
    /// when there is neither. Other controllers stay as they are.
    public func resolved(bluezRunning: Bool, adapters: [String]) -> BLEController? {
        guard self == .auto else { return self }
        if bluezRunning { return .bluez(adapter: nil) }
        let indexes = adapters.compactMap { name -> UInt16? in
            guard name.hasPrefix("hci") else { return nil }
            return UInt16(name.dropFirst(3))
        }
        return indexes.min().map { .host(.hci(index: $0)) }
    }
}
