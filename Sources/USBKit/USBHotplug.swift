import CLibUSB
import Dispatch
import Foundation
import Synchronization

/// Devices plugged in and unplugged, as they happen: libusb's hotplug events where it offers
/// them (Linux with udev or the kernel's netlink), else a look at the device list every
/// `pollInterval` (said by ``usesHotplug``). The devices present when watching starts arrive
/// first.
public final class USBHotplug: Sendable {
    public enum Event: Hashable, Sendable {
        case arrived(USBDeviceInfo)
        case left(USBDeviceInfo)
    }

    private final class Box: Sendable {
        let continuation: AsyncStream<Event>.Continuation
        let filter: @Sendable (UInt16, UInt16) -> Bool
        init(_ continuation: AsyncStream<Event>.Continuation, filter: @escaping @Sendable (UInt16, UInt16) -> Bool) {
            self.continuation = continuation
            self.filter = filter
        }
    }

    public let events: AsyncStream<Event>
    /// True when libusb reports the events; false when the device list is polled.
    public let usesHotplug: Bool
    private let context: USBContext
    private let box: Box
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let handle = Mutex<Int32?>(nil)

    /// Watches the devices whose ids match `filter`.
    public init(context: USBContext, pollInterval: Duration = .seconds(1), forcePolling: Bool = false,
                matching filter: @escaping @Sendable (UInt16, UInt16) -> Bool) {
        self.context = context
        let (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        self.events = events
        box = Box(continuation, filter: filter)
        usesHotplug = !forcePolling && USBContext.hasHotplug
        let thread: Thread
        if usesHotplug {
            var registered: libusb_hotplug_callback_handle = 0
            let events = Int32(LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED.rawValue | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT.rawValue)
            let rc = hg_usb_hotplug_register_callback(
                context.raw, events, Int32(LIBUSB_HOTPLUG_ENUMERATE.rawValue), LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
                LIBUSB_HOTPLUG_MATCH_ANY, { _, device, event, userData in
                    guard let device, let userData else { return 0 }
                    let box = Unmanaged<Box>.fromOpaque(userData).takeUnretainedValue()
                    guard let info = USBContext.info(device), box.filter(info.vendorID, info.productID) else { return 0 }
                    box.continuation.yield(event == LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED ? .arrived(info) : .left(info))
                    return 0
                }, Unmanaged.passUnretained(box).toOpaque(), &registered)
            if rc == 0 { handle.withLock { $0 = registered } }
            thread = Thread { [self] in handleEvents() }
        } else {
            let interval = Double(pollInterval.components.seconds) + Double(pollInterval.components.attoseconds) / 1e18
            thread = Thread { [self] in poll(every: interval) }
        }
        thread.name = "healthgate-usb-hotplug"
        thread.start()
    }

    private func handleEvents() {
        defer { done.signal() }
        while !stopping.load(ordering: .acquiring) {
            var tv = timeval(tv_sec: 0, tv_usec: 250_000)
            _ = hg_usb_handle_events_timeout_completed(context.raw, &tv, nil)
        }
    }

    private func poll(every interval: Double) {
        defer { done.signal() }
        var present: Set<USBDeviceInfo> = []
        while !stopping.load(ordering: .acquiring) {
            if let now = try? context.devices(matching: { [box] in box.filter($0, $1) }) {
                let seen = Set(now)
                for info in now where !present.contains(info) { box.continuation.yield(.arrived(info)) }
                for info in present.subtracting(seen).sorted(by: { ($0.bus, $0.address) < ($1.bus, $1.address) }) {
                    box.continuation.yield(.left(info))
                }
                present = seen
            }
            var slept = 0.0
            while slept < interval, !stopping.load(ordering: .acquiring) {
                Thread.sleep(forTimeInterval: 0.1)
                slept += 0.1
            }
        }
    }

    /// Stops watching and ends ``events``. Blocks up to a quarter of a second.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let registered = handle.withLock({ $0 }) {
            hg_usb_hotplug_deregister_callback(context.raw, registered)
            hg_usb_interrupt_event_handler(context.raw)
        }
        done.wait()
        box.continuation.finish()
    }

    deinit { stop() }
}
