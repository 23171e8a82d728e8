import CLibUSB
import Dispatch
import Foundation
import Synchronization
import Timing

/// A USB device opened for bulk transfers on one interface: one OUT and one IN endpoint, a reader
/// thread that always keeps an IN transfer pending and hands what arrives to `onInput`, and
/// writes done on a queue of their own. No call blocks Swift's cooperative pool.
///
/// Opening follows what USB serial-like devices need on Linux: the kernel driver bound to the
/// interface (for an ANT stick, `usb_serial_simple`) is detached and re-attached on close,
/// configuration 1 is set when the device is in another one, the interface is claimed (another
/// program holding it is ``USBError/isBusy``), and both endpoints' halts are cleared.
public final class USBBulkDevice: Sendable {
    public struct Configuration: Sendable {
        public var interface: Int32 = 0
        /// The bulk endpoints; nil: the interface's first bulk OUT and IN endpoints, read from the
        /// device's configuration descriptor (an ANT stick has 0x01 and 0x81; an emulated one
        /// on a gadget controller may have others).
        public var outEndpoint: UInt8?
        public var inEndpoint: UInt8?
        /// Bytes asked for by each IN transfer; nil: the IN endpoint's packet size (a short read
        /// ends a transfer; some devices dislike reads of another size).
        public var inLength: Int?
        /// How often the reader looks whether it should stop (its IN transfer stays pending).
        public var readTimeoutMs: UInt32 = 250
        /// How long one OUT transfer may take.
        public var writeTimeoutMs: UInt32 = 1000

        public init() {}
    }

    /// What the reader hands over.
    public enum Input: Sendable {
        case bytes([UInt8])
        /// The IN endpoint stalled and its halt was cleared (counted; reading goes on).
        case stallCleared
        /// Reading ended: the device is gone or failed; nothing more comes.
        case failed(USBError)
    }

    public let info: USBDeviceInfo
    public let configuration: Configuration
    /// The endpoints in use, and the length of each IN transfer.
    public let outEndpoint: UInt8
    public let inEndpoint: UInt8
    public let inLength: Int
    /// The kernel driver that was bound to the interface and was detached, if any.
    public let detachedDriver: String?
    private let context: USBContext
    nonisolated(unsafe) private let handle: OpaquePointer
    private let stopping = Atomic<Bool>(false)
    private let readerDone = DispatchSemaphore(value: 0)
    private let writes = DispatchQueue(label: "healthgate.usb.write")
    private let closed = Mutex(false)

    /// Opens `info`, prepares the interface and starts the reader, which calls `onInput` (on its
    /// own thread, in order) until the device is closed or fails.
    public init(context: USBContext, info: USBDeviceInfo, configuration: Configuration = Configuration(),
                onInput: @escaping @Sendable (Input) -> Void) throws(USBError) {
        self.context = context
        self.info = info
        self.configuration = configuration
        let handle = try context.open(info)
        var detached: String?
        var endpoints: (out: UInt8, in: UInt8, length: Int) = (0, 0, 0)
        do {
            let interface = configuration.interface
            if hg_usb_kernel_driver_active(handle, interface) == 1 {
                detached = info.kernelDriver(interface: Int(interface)) ?? "a kernel driver"
                try USBError.check("detach the kernel driver (\(detached!)) from interface \(interface)",
                                   hg_usb_detach_kernel_driver(handle, interface))
            }
            var current: Int32 = 0
            if hg_usb_get_configuration(handle, &current) != 0 || current != 1 {
                try USBError.check("set configuration 1", hg_usb_set_configuration(handle, 1))
            }
            try USBError.check("claim interface \(interface)", hg_usb_claim_interface(handle, interface))
            var found: (out: UInt8, in: UInt8, size: Int32) = (0, 0, 0)
            if configuration.outEndpoint == nil || configuration.inEndpoint == nil || configuration.inLength == nil {
                try USBError.check("find the bulk endpoints of interface \(interface)",
                                   hg_usb_bulk_endpoints(handle, interface, &found.in, &found.out, &found.size))
            }
            endpoints = (configuration.outEndpoint ?? found.out, configuration.inEndpoint ?? found.in,
                         configuration.inLength ?? max(8, Int(found.size)))
            // A halt left by an earlier program: cleared (a device that cannot is told by its
            // first transfer, so a failure here is not one).
            _ = hg_usb_clear_halt(handle, endpoints.out)
            _ = hg_usb_clear_halt(handle, endpoints.in)
        } catch {
            if detached != nil { _ = hg_usb_attach_kernel_driver(handle, configuration.interface) }
            hg_usb_close(handle)
            var error = error
            if error.isBusy {
                error.heldBy = DeviceNodeHolders.holders(of: DeviceNodeHolders.node(bus: info.bus, address: info.address)).map(\.description)
            }
            throw error
        }
        self.handle = handle
        detachedDriver = detached
        (outEndpoint, inEndpoint, inLength) = endpoints
        let thread = Thread { [self] in read(onInput) }
        thread.name = "healthgate-usb-\(info.sysfsName)"
        thread.start()
    }

    deinit { close() }

    /// Sends `bytes` as one OUT transfer (several packets if longer than one). Throws for a
    /// transfer that failed or timed out.
    public func write(_ bytes: [UInt8]) async throws(USBError) {
        try await OffPool.run(on: writes) { [self] () throws(USBError) in try writeNow(bytes) }
    }

    private func writeNow(_ bytes: [UInt8]) throws(USBError) {
        guard !closed.withLock({ $0 }) else { throw USBError("write", code: LIBUSB_ERROR_NO_DEVICE.rawValue) }
        var data = bytes
        var sent: Int32 = 0
        let step = "write \(bytes.count) bytes to endpoint 0x\(String(outEndpoint, radix: 16))"
        try USBError.check(step, hg_usb_bulk_transfer(handle, outEndpoint, &data, Int32(data.count), &sent,
                                                      configuration.writeTimeoutMs))
        if Int(sent) != bytes.count { throw USBError(step + " (\(sent) sent)", code: LIBUSB_ERROR_IO.rawValue) }
    }

    /// The reader: one IN transfer pending at all times until stopped or failed. It is never
    /// cancelled to look at the clock (a transfer cancelled while the device sends can lose what
    /// it sent): `readTimeoutMs` is only how often the thread looks whether it should stop.
    private func read(_ onInput: @Sendable (Input) -> Void) {
        defer { readerDone.signal() }
        let step = "read endpoint 0x\(String(inEndpoint, radix: 16))"
        var error: Int32 = 0
        guard let reader = hg_usb_reader_start(context.raw, handle, inEndpoint, Int32(inLength), &error) else {
            onInput(.failed(USBError(step, code: error)))
            return
        }
        defer { hg_usb_reader_stop(reader) }
        var buffer = [UInt8](repeating: 0, count: inLength)
        while !stopping.load(ordering: .acquiring) {
            var received: Int32 = 0
            let rc = hg_usb_reader_wait(reader, &buffer, Int32(configuration.readTimeoutMs), &received)
            if received > 0 { onInput(.bytes(Array(buffer.prefix(Int(received))))) }
            switch rc {
            case 0:
                continue
            case LIBUSB_ERROR_PIPE.rawValue:
                if hg_usb_clear_halt(handle, inEndpoint) == 0, hg_usb_reader_resubmit(reader) == 0 {
                    onInput(.stallCleared)
                    continue
                }
                onInput(.failed(USBError(step, code: rc)))
                return
            case LIBUSB_ERROR_OVERFLOW.rawValue, LIBUSB_ERROR_TIMEOUT.rawValue, LIBUSB_ERROR_INTERRUPTED.rawValue:
                // More than one packet's worth arrived (lost; the frame decoder resyncs), or the
                // transfer ended without data: submitted again.
                let again = hg_usb_reader_resubmit(reader)
                if again == 0 { continue }
                if !stopping.load(ordering: .acquiring) { onInput(.failed(USBError(step, code: again))) }
                return
            default:
                if !stopping.load(ordering: .acquiring) { onInput(.failed(USBError(step, code: rc))) }
                return
            }
        }
    }

    /// Resets the device on the bus (a device that stopped answering). The device may come back
    /// under another address, as if plugged in again: close this one and open it anew.
    public func resetDevice() async throws(USBError) {
        try await OffPool.run(on: writes) { [self] () throws(USBError) in try USBError.check("reset \(info)", hg_usb_reset_device(handle)) }
    }

    /// ``close()`` off the cooperative pool.
    public func shutdown() async {
        await OffPool.run(on: .global()) { [self] in close() }
    }

    /// Stops the reader, releases the interface, gives it back to the kernel driver it was taken
    /// from, and closes the device. Blocks up to one read timeout; idempotent.
    public func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        stopping.store(true, ordering: .releasing)
        readerDone.wait()
        writes.sync {}
        _ = hg_usb_release_interface(handle, configuration.interface)
        if detachedDriver != nil { _ = hg_usb_attach_kernel_driver(handle, configuration.interface) }
        hg_usb_close(handle)
    }
}
