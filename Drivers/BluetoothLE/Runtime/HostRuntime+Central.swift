public import BluetoothCentral

extension HostRuntime: BLECentral {
    public func scan(for duration: Duration) async throws(BLEError) -> AsyncStream<DiscoveredDevice> {
        try await scan(duration: duration)
    }

    public func connect(_ peer: DeviceAddress, timeout: Duration) async throws(BLEError) -> any BLEConnection {
        try await connect(to: peer, timeout: timeout)
    }
}

extension GATTClient: BLEConnection {}
