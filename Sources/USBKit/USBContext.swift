import CLibUSB
import Synchronization

/// Where a USB device sits: its bus and address (which change when it is plugged in again), the
/// port path (which does not, while it stays in the same socket), and its ids.
public struct USBDeviceInfo: Hashable, Sendable, CustomStringConvertible {
    public var bus: UInt8
    public var address: UInt8
    /// Ports from the root hub down (`[2]` for bus 1 port 2; `1-2` in sysfs).
    public var ports: [UInt8]
    public var vendorID: UInt16
    public var productID: UInt16
    /// Index of the serial number string descriptor (0: none).
    public var serialIndex: UInt8

    public init(bus: UInt8, address: UInt8, ports: [UInt8], vendorID: UInt16, productID: UInt16, serialIndex: UInt8 = 0) {
        self.bus = bus
        self.address = address
        self.ports = ports
        self.vendorID = vendorID
        self.productID = productID
        self.serialIndex = serialIndex
    }

    /// The device's sysfs name (`1-2`, `1-2.3`): stable across re-plugging into the same port.
    public var sysfsName: String {
        "\(bus)-" + (ports.isEmpty ? "0" : ports.map(String.init).joined(separator: "."))
    }

    /// `bus 001 device 005` as lsusb says it.
    public var busAddress: String {
        "bus \(String(repeating: "0", count: max(0, 3 - String(bus).count)))\(bus) device "
            + "\(String(repeating: "0", count: max(0, 3 - String(address).count)))\(address)"
    }

    public var ids: String { hex4(vendorID) + ":" + hex4(productID) }

    public var description: String { "\(ids) at \(sysfsName) (\(busAddress))" }

    /// The name of the kernel driver bound to interface `interface`, read from sysfs (nil: none,
    /// or sysfs is not there).
    public func kernelDriver(interface: Int = 0) -> String? {
        USBSysfs.driverName(device: sysfsName, interface: interface)
    }
}

func hex4(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

/// One libusb context: the devices on the machine, and the handle to open them. Safe to share;
/// every call blocks (open, transfers), so callers keep it off Swift's cooperative pool.
public final class USBContext: Sendable {
    /// libusb's context (an opaque pointer, immutable once made).
    nonisolated(unsafe) let raw: OpaquePointer

    /// Initializes libusb (loading it on first use). Throws when libusb cannot be loaded or
    /// started.
    public init() throws(USBError) {
        var context: OpaquePointer?
        try USBError.check("initialize libusb", hg_usb_init(&context))
        guard let context else { throw USBError("initialize libusb", code: LIBUSB_ERROR_OTHER.rawValue) }
        raw = context
    }

    deinit { hg_usb_exit(raw) }

    /// Whether libusb can report plugged and unplugged devices (hotplug) on this system.
    public static var hasHotplug: Bool { hg_usb_has_capability(UInt32(LIBUSB_CAP_HAS_HOTPLUG.rawValue)) != 0 }

    /// The devices whose ids match `filter`, in bus and address order.
    public func devices(matching filter: (UInt16, UInt16) -> Bool = { _, _ in true }) throws(USBError) -> [USBDeviceInfo] {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = try USBError.check("list USB devices", Int32(truncatingIfNeeded: hg_usb_get_device_list(raw, &list)))
        defer { hg_usb_free_device_list(list, 1) }
        var found: [USBDeviceInfo] = []
        for i in 0..<Int(count) {
            guard let device = list?[i], let info = Self.info(device), filter(info.vendorID, info.productID) else { continue }
            found.append(info)
        }
        return found.sorted { ($0.bus, $0.address) < ($1.bus, $1.address) }
    }

    static func info(_ device: OpaquePointer) -> USBDeviceInfo? {
        var descriptor = libusb_device_descriptor()
        guard hg_usb_get_device_descriptor(device, &descriptor) == 0 else { return nil }
        var ports = [UInt8](repeating: 0, count: 8)
        let depth = hg_usb_get_port_numbers(device, &ports, Int32(ports.count))
        return USBDeviceInfo(bus: hg_usb_get_bus_number(device), address: hg_usb_get_device_address(device),
                             ports: depth > 0 ? Array(ports.prefix(Int(depth))) : [],
                             vendorID: descriptor.idVendor, productID: descriptor.idProduct, serialIndex: descriptor.iSerialNumber)
    }

    /// Finds the device `info` names (same bus and address) and opens it.
    func open(_ info: USBDeviceInfo) throws(USBError) -> OpaquePointer {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = try USBError.check("list USB devices", Int32(truncatingIfNeeded: hg_usb_get_device_list(raw, &list)))
        defer { hg_usb_free_device_list(list, 1) }
        for i in 0..<Int(count) {
            guard let device = list?[i], hg_usb_get_bus_number(device) == info.bus, hg_usb_get_device_address(device) == info.address
            else { continue }
            var handle: OpaquePointer?
            try USBError.check("open \(info)", hg_usb_open(device, &handle))
            guard let handle else { throw USBError("open \(info)", code: LIBUSB_ERROR_OTHER.rawValue) }
            return handle
        }
        throw USBError("open \(info)", code: LIBUSB_ERROR_NO_DEVICE.rawValue)
    }
}
