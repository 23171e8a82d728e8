public import DriverKit
public import Foundation
import HealthModel
import LinuxAdapters
import Logging
import MassStorageDriver
import USBKit
import WatchLayout
import WatchMTP

/// The `watch` driver: a Garmin watch plugged in over USB has its new FIT files fetched and
/// imported at once (``WatchImporter``: once each, never writing to the watch), whichever way it
/// attaches. MTP: it waits for libusb's hotplug events (no polling); a second after a device
/// arrives, libmtp looks for MTP devices (its device table, and its probe for unknown ones) and
/// each new watch is read. Mass storage: it waits for the kernel's mount table to change
/// (``MountTable``) and reads each volume newly mounted under `roots` that holds a `GARMIN`
/// folder. A watch that cannot be opened (another program holds it, or no permission) is tried
/// again every `retry_s` while it stays plugged in, and the reason shows in `healthgate status`.
public struct WatchDriver: DeviceDriver {
    public static let id = "watch"

    /// The `[drivers.NAME]` table: `folder`, `since`, `settle_s`, `retry_s`, `mtp`, `roots`, `mountinfo`.
    public struct Settings: Decodable, Sendable, Equatable {
        /// Where the fetched files are kept (default: `watch/` in the state directory).
        public var folder: String?
        /// Files modified before this day (UTC) are not fetched: the backlog's start.
        public var since: Date?
        public var settle: Duration = .seconds(2)
        public var retry: Duration = .seconds(30)
        /// Read watches that speak MTP.
        public var mtp = true
        /// Where watches that are mass storage are mounted (empty: none are read).
        public var roots = ["/media", "/run/media"]
        public var mountInfo = "/proc/self/mountinfo"

        public init() {}

        enum CodingKeys: String, CodingKey {
            case folder, since, settle = "settle_s", retry = "retry_s", mtp, roots, mountInfo = "mountinfo"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if let folder = try c.decodeIfPresent(String.self, forKey: .folder) {
                guard folder.hasPrefix("/") else { throw c.configError(.folder, "must be an absolute folder") }
                self.folder = folder
            }
            if let text = try c.decodeIfPresent(String.self, forKey: .since) {
                guard let date = Self.day(text) else { throw c.configError(.since, "'\(text)' is not a day (YYYY-MM-DD)") }
                since = date
            }
            settle = try c.decodeIfPresent(duration: .settle, unit: .seconds, in: .milliseconds(100)...(.seconds(3600))) ?? settle
            retry = try c.decodeIfPresent(duration: .retry, unit: .seconds, in: .seconds(1)...(.seconds(86400))) ?? retry
            mtp = try c.decodeIfPresent(Bool.self, forKey: .mtp) ?? mtp
            if let roots = try c.decodeIfPresent([String].self, forKey: .roots) {
                guard roots.allSatisfy({ $0.hasPrefix("/") }) else { throw c.configError(.roots, "must be a list of absolute folders") }
                self.roots = roots
            }
            mountInfo = try c.decodeIfPresent(String.self, forKey: .mountInfo) ?? mountInfo
        }

        /// `YYYY-MM-DD` as the start of that day in UTC.
        static func day(_ text: String) -> Date? {
            let parts = text.split(separator: "-")
            guard parts.count == 3, parts[0].count == 4, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
                  (1...12).contains(m), (1...31).contains(d) else { return nil }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            return calendar.date(from: DateComponents(year: y, month: m, day: d))
        }
    }

    let settings: Settings
    let context: DriverContext

    public init(settings: Settings, context: DriverContext) {
        self.settings = settings
        self.context = context
    }

    private enum Wake: Sendable {
        case arrived
        case left(key: String)
        case look
        case mounts
    }

    public func run(into sink: some RecordSink) async throws {
        guard let folder = settings.folder ?? context.stateDirectory.map({ $0 + "/watch" }) else {
            throw ConfigError(keyPath: "folder", reason: "no state directory here: give the folder the fetched files are kept in")
        }
        var configuration = WatchImporter.Configuration(folder: folder, since: settings.since)
        configuration.planner.settle = settings.settle.inSeconds
        let logger = context.logger
        configuration.onEvent = { event in
            switch event {
            case .listed(let watch, let files, let toFetch):
                logger.info("\(watch.name) \(watch.serial): \(files) file(s) on the watch, \(toFetch) new")
            case .copying(let path, let size): logger.debug("copying \(path) (\(size) bytes)")
            case .refused(let path, let reason): logger.warning("\(path): not fetched: \(reason)")
            case .fileFailed(let path, let reason): logger.warning("\(DisplayText.safe(path, limit: 200)): \(reason)")
            case .stillWriting(let count): logger.info("\(count) file(s) still being written; looking again in \(settings.settle)")
            case .progress, .imported: break
            }
        }
        let importer = WatchImporter(configuration: configuration)
        let (wakes, wake) = AsyncStream<Wake>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            if settings.mtp { group.addTask { await watchUSB(wake) } }
            if !settings.roots.isEmpty {
                group.addTask {
                    do { try await MountTable.watch(settings.mountInfo, poll: .seconds(2)) { wake.yield(.mounts) } } catch {
                        context.report(.problem(kind: "watch", message: "\(error)"))
                    }
                }
            }
            // The one owner of what is attached: every wake is handled here, in order.
            var visited: [String: AttachedWatch] = [:]
            // Mounts seen under the roots by key, with the watch each holds (nil: not a watch).
            var mounted: [String: AttachedWatch?] = [:]
            var failing: [String: String] = [:]
            var lookPending = false
            func lookSoon(after delay: Duration) {
                guard !lookPending else { return }
                lookPending = true
                group.addTask {
                    guard (try? await Task.sleep(for: delay)) != nil else { return }
                    wake.yield(.look)
                }
            }
            for await next in wakes {
                switch next {
                case .arrived:
                    lookSoon(after: .seconds(1))
                case .left(let key):
                    failing[key] = nil
                    if let watch = visited.removeValue(forKey: key) { context.report(.disconnected(device: WatchFetched.device(serial: watch.serial))) }
                    if failing.isEmpty { context.report(.waiting(reason: nil)) }
                case .mounts:
                    let now = currentMounts()
                    let keys = Set(now.map(\.key))
                    for (key, watch) in mounted where !keys.contains(key) {
                        mounted[key] = nil
                        if let watch { context.report(.disconnected(device: WatchFetched.device(serial: watch.serial))) }
                    }
                    for (key, mountPoint) in now where mounted.index(forKey: key) == nil {
                        let connection = await MountedWatchConnection.at(mountPoint)
                        mounted[key] = .some(connection?.watch)
                        if let connection { await visit(connection, importer: importer, sink: sink) }
                    }
                case .look:
                    lookPending = false
                    let devices: [MTPRawDevice]
                    do { devices = try await MTP.run { () throws(MTPError) in try MTP.detect() } } catch {
                        context.report(.problem(kind: "watch", message: "\(error)"))
                        continue
                    }
                    for raw in devices {
                        let key = "\(raw.bus)-\(raw.address)"
                        guard visited[key] == nil else { continue }
                        let connection: MTPWatchConnection
                        do { connection = try await MTPWatchConnection.open(raw) } catch {
                            let reason = "\(error)"
                            if failing[key] != reason { logger.warning("\(DisplayText.safe(reason, limit: 500)); trying again every \(settings.retry)") }
                            failing[key] = reason
                            context.report(.waiting(reason: reason))
                            continue
                        }
                        failing[key] = nil
                        visited[key] = connection.watch
                        context.report(.waiting(reason: nil))
                        await visit(connection, importer: importer, sink: sink)
                        await connection.close()
                    }
                    if !failing.isEmpty { lookSoon(after: settings.retry) }
                }
            }
            group.cancelAll()
        }
    }

    /// Feeds `wake` with the USB devices arriving and leaving (libusb hotplug), until cancelled. Without
    /// libmtp or libusb it says why and waits (the mounted watches are still read).
    private func watchUSB(_ wake: AsyncStream<Wake>.Continuation) async {
        if let reason = MTP.loadError {
            context.report(.waiting(reason: reason))
            return
        }
        let usb: USBContext
        do { usb = try USBContext() } catch {
            context.report(.waiting(reason: "\(error)"))
            return
        }
        let hotplug = USBHotplug(context: usb, matching: { _, _ in true })
        await withTaskCancellationHandler {
            for await event in hotplug.events {
                switch event {
                case .arrived: wake.yield(.arrived)
                case .left(let info): wake.yield(.left(key: "\(info.bus)-\(info.address)"))
                }
            }
        } onCancel: {
            hotplug.stop()
        }
    }

    /// The mounts under `roots` now, by key (mount ID and mount point: a volume mounted again is a
    /// new visit) with their mount points.
    private func currentMounts() -> [(key: String, mountPoint: String)] {
        guard let text = try? ProcFile.read(settings.mountInfo) else { return [] }
        return MountInfo.mounts(MountInfo.parse(text).mounts, under: settings.roots).map { ("\($0.id) \($0.mountPoint)", $0.mountPoint) }
    }

    /// Fetches and imports what is new on one watch, and says so.
    private func visit(_ connection: any WatchConnection, importer: WatchImporter, sink: some RecordSink) async {
        let watch = connection.watch
        context.report(.connected(device: WatchFetched.device(serial: watch.serial), name: watch.name))
        do {
            let summary = try await importer.run(connection, sink: sink, files: context.files)
            let failed = summary.failed.isEmpty ? "" : ", \(summary.failed.count) failed"
            context.logger.info("\(watch.name) \(watch.serial): \(summary.fetched.count) file(s) fetched, \(summary.records) record(s) stored\(failed)")
            for failure in summary.failed { context.report(.problem(kind: "watch", message: failure)) }
        } catch is CancellationError {
        } catch {
            context.report(.problem(kind: "watch", message: "\(watch.name) \(watch.serial): \(error)"))
        }
    }
}

extension WatchDriver {
    /// The registry's entry.
    public static let descriptor = DriverDescriptor.device(
        WatchDriver.self, summary: "Fetches and imports a Garmin watch's new FIT files when it is plugged in over USB (MTP or mass storage)",
        sample: PackageResources.sample_toml)
}
