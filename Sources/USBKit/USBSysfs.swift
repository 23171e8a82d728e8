import Foundation

/// What sysfs says about USB devices: the kernel driver bound to an interface.
enum USBSysfs {
    static let root = "/sys/bus/usb/devices"

    /// The name of the driver bound to `device`'s interface `interface` in configuration 1
    /// (`usb_serial_simple`), or nil.
    static func driverName(device: String, interface: Int) -> String? {
        let link = "\(root)/\(device):1.\(interface)/driver"
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) else { return nil }
        return (target as NSString).lastPathComponent
    }
}
