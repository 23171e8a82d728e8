public import BluetoothCentral

/// The GATT client of one LE link. Every call is bounded by its timeout; after the link went
/// down every call fails with `BLEError.disconnected(reason)`.
public final class GATTClient: Sendable {
    public let runtime: HostRuntime
    public let peer: DeviceAddress
    /// The connection handle (reused by the controller after this link ends).
    public let handle: UInt16
    let linkID: UInt64

    init(runtime: HostRuntime, linkID: UInt64, handle: UInt16, peer: DeviceAddress) {
        self.runtime = runtime
        self.linkID = linkID
        self.handle = handle
        self.peer = peer
    }

    /// Discovers every primary service, characteristic and descriptor.
    @discardableResult
    public func discover(timeout: Duration = .seconds(10)) async throws(BLEError) -> GATTDatabase {
        try await runtime.discover(linkID: linkID, handle: handle, timeout: timeout)
    }

    /// Reads a characteristic value (Read Blob for long values). Needs `discover()` first.
    public func read(_ characteristic: BluetoothUUID, timeout: Duration = .seconds(5)) async throws(BLEError) -> [UInt8] {
        try await runtime.read(linkID: linkID, handle: handle, characteristic: characteristic, timeout: timeout)
    }

    /// Enables notifications (or indications when that is all the characteristic offers) and
    /// returns the values as they arrive. The stream finishes when the link goes down.
    public func subscribe(_ characteristic: BluetoothUUID, timeout: Duration = .seconds(5)) async throws(BLEError) -> AsyncStream<GATTNotification> {
        try await runtime.subscribe(linkID: linkID, handle: handle, characteristic: characteristic, timeout: timeout)
    }

    /// Like `subscribe(_:timeout:)`, but feeds a stream the caller owns and keeps it open when
    /// the link ends (a session feeds one stream across reconnections).
    public func subscribe(_ characteristic: BluetoothUUID, into continuation: AsyncStream<GATTNotification>.Continuation,
                          timeout: Duration = .seconds(5)) async throws(BLEError) {
        _ = try await runtime.subscribe(linkID: linkID, handle: handle, characteristic: characteristic, into: continuation,
                                        finishOnDisconnect: false, timeout: timeout)
    }

    /// Write Request to a characteristic's value. Needs `discover()` first.
    public func write(_ characteristic: BluetoothUUID, _ value: [UInt8], timeout: Duration = .seconds(5)) async throws(BLEError) {
        try await runtime.write(linkID: linkID, handle: handle, characteristic: characteristic, value: value, timeout: timeout)
    }

    /// Write Request to a handle.
    public func write(valueHandle: UInt16, _ value: [UInt8], timeout: Duration = .seconds(5)) async throws(BLEError) {
        try await runtime.write(linkID: linkID, handle: handle, valueHandle: valueHandle, value: value, timeout: timeout)
    }

    /// Disconnects (reason Remote User Terminated to the peer) and waits for the link to go down;
    /// returns the reason the controller reports (0x16, terminated by local host).
    @discardableResult
    public func disconnect(timeout: Duration = .seconds(3)) async throws(BLEError) -> HCIStatus? {
        try await runtime.disconnect(linkID: linkID, handle: handle, timeout: timeout)
    }

    /// Waits until the link goes down and returns the reason (nil when the transport closed).
    /// Without a timeout it waits as long as the link lives.
    public func disconnected(timeout: Duration? = nil) async throws(BLEError) -> HCIStatus? {
        try await runtime.disconnected(linkID: linkID, handle: handle, timeout: timeout)
    }

    public var mtu: UInt16? { get async { await runtime.mtu(linkID: linkID, handle: handle) } }
    public var database: GATTDatabase? { get async { await runtime.database(linkID: linkID, handle: handle) } }
}
