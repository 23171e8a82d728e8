import CLibUSB

/// A libusb call that failed: which step, libusb's code, and what it means for a user.
public struct USBError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What HealthGate was doing (`claim interface 0`, `read 0x81`).
    public var step: String
    /// libusb's error code (negative), or 0 for a failure of HealthGate's own (a device gone).
    public var code: Int32

    /// For a device another program holds: the processes seen holding its node
    /// (``DeviceNodeHolders``), `python3 (pid 412)`.
    public var heldBy: [String] = []

    public init(_ step: String, code: Int32) {
        self.step = step
        self.code = code
    }

    /// libusb's name of the code (`LIBUSB_ERROR_BUSY`).
    public var name: String { String(cString: hg_usb_error_name(code)) }

    public var isTimeout: Bool { code == LIBUSB_ERROR_TIMEOUT.rawValue }
    /// The device is gone (unplugged, or reset into another device).
    public var isGone: Bool { code == LIBUSB_ERROR_NO_DEVICE.rawValue }
    /// The endpoint is halted (stalled) and must be cleared.
    public var isStall: Bool { code == LIBUSB_ERROR_PIPE.rawValue }
    /// Another program (or the kernel) holds the interface.
    public var isBusy: Bool { code == LIBUSB_ERROR_BUSY.rawValue }
    /// The user may not open the device node.
    public var isAccessDenied: Bool { code == LIBUSB_ERROR_ACCESS.rawValue }

    /// What the failure means and what to do about it, in a user's words.
    public var explanation: String {
        switch code {
        case LIBUSB_ERROR_ACCESS.rawValue:
            "permission denied: install HealthGate's udev rule (make install; udevadm control --reload; plug the stick in again) or run as a user of the group the rule names"
        case LIBUSB_ERROR_BUSY.rawValue:
            heldBy.isEmpty
                ? "another program holds it (Garmin Express or ANT Agent, another HealthGate, openant, GoldenCheetah): stop that program"
                : "another program holds it: \(heldBy.joined(separator: ", ")): stop that program"
        case LIBUSB_ERROR_NO_DEVICE.rawValue:
            "the device is gone (unplugged)"
        case LIBUSB_ERROR_NOT_SUPPORTED.rawValue:
            hg_usb_load_error().map { String(cString: $0) } ?? "not supported on this system"
        default:
            String(cString: hg_usb_strerror(code))
        }
    }

    public var description: String { "\(step): \(name) (\(explanation))" }

    /// Throws for a negative libusb return code; returns non-negative codes.
    @discardableResult
    public static func check(_ step: @autoclosure () -> String, _ code: Int32) throws(USBError) -> Int32 {
        if code < 0 { throw USBError(step(), code: code) }
        return code
    }
}
