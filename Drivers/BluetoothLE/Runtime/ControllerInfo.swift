public import BluetoothCentral
public import BLEHost

/// What the init sequence learned about the controller.
public struct ControllerInfo: Equatable, Sendable {
    public var address: DeviceAddress
    public var version: HCICommandReturn.LocalVersion?
    public var aclDataLength: Int
    public var aclPackets: Int
    /// The random static address the host uses as its own LE address.
    public var randomAddress: DeviceAddress
}
