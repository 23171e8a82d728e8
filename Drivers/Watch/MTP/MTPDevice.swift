import CLibMTP
import Dispatch
import Foundation
import Timing
import Synchronization
import USBKit
public import WatchLayout

/// Why an MTP look failed: what was being done, and libmtp's own words.
public struct MTPError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A device libmtp takes for MTP: one in its device table (by vendor and product id) or one its
/// probe found (an interface that says MTP), with where it is on the bus.
public struct MTPRawDevice: Hashable, Sendable, CustomStringConvertible {
    public var bus: UInt32
    public var address: UInt8
    public var vendorID: UInt16
    public var productID: UInt16
    /// The names libmtp's table gives (nil for a device its probe found).
    public var vendor: String?
    public var product: String?

    public init(bus: UInt32, address: UInt8, vendorID: UInt16, productID: UInt16, vendor: String? = nil, product: String? = nil) {
        self.bus = bus
        self.address = address
        self.vendorID = vendorID
        self.productID = productID
        self.vendor = vendor
        self.product = product
    }

    public var ids: String { String(format: "%04x:%04x", vendorID, productID) }
    /// Its device node, `/dev/bus/usb/BBB/DDD`.
    public var node: String { String(format: "/dev/bus/usb/%03d/%03d", bus, address) }
    public var name: String { [vendor, product].compactMap { $0 }.joined(separator: " ") }
    public var description: String { (name.isEmpty ? "MTP device" : name) + " (\(ids), bus \(bus) device \(address))" }
}

/// One storage of an open device (a watch has one: "Primary" or "Internal Storage").
public struct MTPStorage: Hashable, Sendable {
    public var id: UInt32
    public var description: String
}

/// libmtp. It is not safe to call from two threads at once, so every call runs on ``queue``, one
/// serial thread of its own (a transfer blocks for as long as it takes, never a thread of Swift's
/// concurrency pool): ``run(_:)`` hands work to it.
public enum MTP {
    static let queue = DispatchQueue(label: "healthgate.mtp", qos: .utility)
    nonisolated(unsafe) static let nowhere = open("/dev/null", O_WRONLY | O_CLOEXEC)

    /// Runs `work` on the MTP thread. libmtp prints what it finds on standard output ("Device 0
    /// ... is a Garmin ..." at every look), where `--json` output goes: while it works, standard
    /// output goes nowhere (its errors, on standard error, still show).
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await OffPool.run(on: queue) {
            fflush(nil)
            let saved = dup(STDOUT_FILENO)
            if saved >= 0 { dup2(nowhere, STDOUT_FILENO) }
            defer {
                fflush(nil)
                if saved >= 0 {
                    dup2(saved, STDOUT_FILENO)
                    close(saved)
                }
            }
            return try work()
        }
    }

    /// Why libmtp cannot be used (not installed), or nil.
    public static var loadError: String? { hg_mtp_load_error().map { String(cString: $0) } }

    /// The devices libmtp finds attached now. Call on the MTP thread (``run(_:)``).
    public static func detect() throws(MTPError) -> [MTPRawDevice] {
        if let loadError { throw MTPError(loadError) }
        var raw: UnsafeMutablePointer<LIBMTP_raw_device_t>?
        var count: Int32 = 0
        let rc = hg_mtp_detect_raw_devices(&raw, &count)
        defer { free(raw) }
        switch rc {
        case LIBMTP_ERROR_NONE: break
        case LIBMTP_ERROR_NO_DEVICE_ATTACHED: return []
        case LIBMTP_ERROR_CONNECTING: throw MTPError("libmtp could not connect to the USB devices (LIBMTP_ERROR_CONNECTING)")
        case LIBMTP_ERROR_MEMORY_ALLOCATION: throw MTPError("libmtp ran out of memory listing the USB devices")
        default: throw MTPError("libmtp could not list the USB devices (error \(rc.rawValue))")
        }
        guard let raw else { return [] }
        return (0..<Int(count)).map { MTPRawDevice(raw[$0]) }
    }
}

extension MTPRawDevice {
    init(_ raw: LIBMTP_raw_device_t) {
        let entry = raw.device_entry
        // The probe's devices carry no product name (or libmtp's placeholder for one).
        let product = entry.product.map { String(cString: $0) }
        self.init(bus: raw.bus_location, address: raw.devnum, vendorID: entry.vendor_id, productID: entry.product_id,
                  vendor: entry.vendor.map { String(cString: $0) }, product: product?.isEmpty == false ? product : nil)
    }
}

/// An open MTP session with one device. Read-only by construction: nothing here writes, deletes or
/// changes anything on the device. Use it on the MTP thread only (``MTP/run(_:)``); ``close()``
/// ends the session.
public final class MTPDevice: @unchecked Sendable {
    public let raw: MTPRawDevice
    public let manufacturer: String?
    public let model: String?
    public let serial: String?
    private var device: UnsafeMutablePointer<LIBMTP_mtpdevice_t>?

    /// Opens a session with `raw` (found again by its place on the bus). Call on the MTP thread.
    public init(opening raw: MTPRawDevice) throws(MTPError) {
        self.raw = raw
        if let loadError = MTP.loadError { throw MTPError(loadError) }
        var list: UnsafeMutablePointer<LIBMTP_raw_device_t>?
        var count: Int32 = 0
        guard hg_mtp_detect_raw_devices(&list, &count) == LIBMTP_ERROR_NONE, let list else {
            free(list)
            throw MTPError("\(raw): it is gone")
        }
        defer { free(list) }
        guard let index = (0..<Int(count)).first(where: { list[$0].bus_location == raw.bus && list[$0].devnum == raw.address }) else {
            throw MTPError("\(raw): it is gone")
        }
        guard let device = hg_mtp_open_raw_device_uncached(&list[index]) else {
            throw MTPError("\(raw): cannot open an MTP session: " + Self.whyNotOpened(raw))
        }
        self.device = device
        manufacturer = Self.take(hg_mtp_get_manufacturername(device))
        model = Self.take(hg_mtp_get_modelname(device))
        serial = Self.take(hg_mtp_get_serialnumber(device))
        hg_mtp_clear_errorstack(device)
    }

    deinit { close() }

    /// Ends the session (the device is free for other programs again).
    public func close() {
        guard let device else { return }
        hg_mtp_release_device(device)
        self.device = nil
    }

    /// The device's storages.
    public func storages() throws(MTPError) -> [MTPStorage] {
        let device = try opened()
        hg_mtp_clear_errorstack(device)
        guard hg_mtp_get_storage(device, LIBMTP_STORAGE_SORTBY_NOTSORTED) == 0 else {
            throw MTPError("\(raw): cannot list its storages: \(errors(device))")
        }
        var found: [MTPStorage] = []
        var storage = device.pointee.storage
        var seen: Set<UInt32> = []
        while let current = storage, seen.insert(current.pointee.id).inserted {
            found.append(MTPStorage(id: current.pointee.id, description: current.pointee.StorageDescription.map { String(cString: $0) } ?? ""))
            storage = current.pointee.next
        }
        return found
    }

    /// The entries of folder `parent` (``rootFolder`` for the storage's root) of `storage`.
    public func list(storage: UInt32, parent: UInt32) throws(MTPError) -> [WatchEntry<UInt32>] {
        let device = try opened()
        hg_mtp_clear_errorstack(device)
        var entries: [WatchEntry<UInt32>] = []
        var file = hg_mtp_get_files_and_folders(device, storage, parent)
        // libmtp says "empty" and "failed" the same way (NULL); its error stack tells them apart.
        if file == nil, let error = errorText(device) { throw MTPError("\(raw): cannot list a folder: \(error)") }
        while let current = file {
            let entry = current.pointee
            let name = entry.filename.map { String(cString: $0) } ?? ""
            entries.append(WatchEntry(ref: entry.item_id, name: name, isFolder: entry.filetype == LIBMTP_FILETYPE_FOLDER,
                                      size: entry.filesize,
                                      modified: entry.modificationdate > 0 ? Date(timeIntervalSince1970: TimeInterval(entry.modificationdate)) : nil))
            file = entry.next
            hg_mtp_destroy_file_t(current)
        }
        return entries
    }

    public static let rootFolder = UInt32(LIBMTP_FILES_AND_FOLDERS_ROOT)

    /// Copies object `id` into `fd` (from its start). `progress` gets the bytes so far and the
    /// total; returning false stops the transfer (then this throws).
    public func copy(_ id: UInt32, to fd: Int32, progress: @escaping (UInt64, UInt64) -> Bool) throws(MTPError) {
        let device = try opened()
        hg_mtp_clear_errorstack(device)
        final class Box {
            let progress: (UInt64, UInt64) -> Bool
            var stopped = false
            init(_ progress: @escaping (UInt64, UInt64) -> Bool) { self.progress = progress }
        }
        let box = Box(progress)
        let rc = withExtendedLifetime(box) {
            hg_mtp_get_file_to_file_descriptor(device, id, fd, { sent, total, data in
                guard let data else { return 0 }
                let box = Unmanaged<Box>.fromOpaque(data).takeUnretainedValue()
                if box.progress(sent, total) { return 0 }
                box.stopped = true
                return 1
            }, Unmanaged.passUnretained(box).toOpaque())
        }
        if box.stopped { throw MTPError("the transfer was stopped") }
        guard rc == 0 else { throw MTPError("\(raw): the transfer failed: \(errors(device))") }
    }

    private func opened() throws(MTPError) -> UnsafeMutablePointer<LIBMTP_mtpdevice_t> {
        guard let device else { throw MTPError("\(raw): the session is closed") }
        return device
    }

    private func errorText(_ device: UnsafeMutablePointer<LIBMTP_mtpdevice_t>) -> String? {
        var texts: [String] = []
        var error = hg_mtp_get_errorstack(device)
        while let current = error, texts.count < 8 {
            texts.append(current.pointee.error_text.map { String(cString: $0) } ?? "error \(current.pointee.errornumber.rawValue)")
            error = current.pointee.next
        }
        hg_mtp_clear_errorstack(device)
        return texts.isEmpty ? nil : texts.joined(separator: "; ")
    }

    private func errors(_ device: UnsafeMutablePointer<LIBMTP_mtpdevice_t>) -> String {
        errorText(device) ?? "no reason given (the device may have been unplugged)"
    }

    private static func take(_ text: UnsafeMutablePointer<CChar>?) -> String? {
        guard let text else { return nil }
        defer { free(text) }
        let value = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return value.isEmpty ? nil : value
    }

    /// Why a session could not be opened, as far as can be told: the device node's permissions, or
    /// the program holding it (on a desktop, the file manager's MTP backend).
    static func whyNotOpened(_ raw: MTPRawDevice) -> String {
        let node = raw.node
        if access(node, R_OK | W_OK) != 0 {
            return "no permission to use \(node) (install the udev rule of Drivers/Watch/README.md, or run as a member of the device's group)"
        }
        let everyone = DeviceNodeHolders.holders(of: node, excluding: -1)
        let holders = everyone.filter { $0.pid != getpid() }
        if !holders.isEmpty {
            let names = holders.map(\.description).joined(separator: ", ")
            let desktop = holders.contains { $0.command.hasPrefix("gvfs") || $0.command.hasPrefix("kiod") }
            return "another program holds it: \(names)"
                + (desktop ? "; it is the desktop's MTP backend: see \"The desktop\" in the watch family's README" : "; stop that program")
        }
        if everyone.contains(where: { $0.pid == getpid() }) {
            return "it does not answer, and libmtp kept it open after the failed session (a fault of libmtp): unplug the watch and plug it in again"
        }
        // Under the shipped unit (ProtectProc=invisible) other users' processes cannot be seen.
        return "it does not answer as an MTP device, or another program holds it (on a desktop, the file manager's MTP backend: "
            + "see \"The desktop\" in the watch family's README; `healthgate watch list` run by the desktop's user names the program)"
    }
}
