public import ANTFS
import ANTProtocol
public import DriverKit
public import Foundation
import LinuxAdapters
import HealthModel
public import USBKit
import Timing

/// What the `ant` driver remembers about a watch (the checkpoint of device `antfs:SERIAL`): the
/// files already fetched, by ANT-FS fetch key (index, date and size as the watch's directory
/// gives them: numbers, no local time, so a change of summer time fetches nothing again).
public struct ANTFSFetched: DriverCheckpoint {
    public static let driver = "ant"
    public var files: [String]

    public init(files: [String] = []) { self.files = files }

    /// The checkpoint's device for the watch with `serial`.
    public static func device(serial: UInt32) -> String { "antfs:\(serial)" }
}

/// Downloads a watch's new files over ANT-FS through an ANT stick: the I/O edge of ``ANTFSHost``
/// (which decides every step). Opens channel 0 of the first stick in the ANT-FS search (the
/// ANT-FS network key on network 0, device type 1, 8 Hz, 2450 MHz), feeds the host every beacon,
/// reassembled burst and transfer event and a tick, and carries out what it returns: acknowledged
/// data and bursts sent, the channel retuned after LINK, the passkey read and stored (one file per
/// watch serial, 0600, under `folder`), the directory filtered (FIT files not fetched before, from
/// `since` on), and each file saved under `folder/SERIAL/` then handed to the file sink with the
/// watch's checkpoint, so the import and "fetched" land in one transaction. Never writes, erases
/// or uploads anything on the watch.
public struct ANTFSDownloader: Sendable {
    public struct Configuration: Sendable {
        /// The ANT-FS network key (8 bytes).
        public var networkKey: [UInt8]
        /// This host's serial number: the watch pairs with it, so it stays the same (the CLI and
        /// the driver keep one in `folder`).
        public var hostSerial: UInt32
        public var allowPairing = false
        /// Where passkeys and downloaded files are kept (the state directory's `antfs/`).
        public var folder: String
        /// Files dated before this are not fetched (nil: all).
        public var since: Date?
        /// Which sticks may be used (nil: the first ANT stick found).
        public var sticks: [String]?
        /// The whole session's limit.
        public var timeout: Duration = .seconds(600)
        public var onEvent: (@Sendable (Event) -> Void)?

        public init(networkKey: [UInt8], hostSerial: UInt32, folder: String) {
            self.networkKey = networkKey
            self.hostSerial = hostSerial
            self.folder = folder
        }
    }

    public enum Event: Sendable {
        case stickOpened(USBDeviceInfo)
        case searching
        case identified(serial: UInt32, name: String)
        case acceptOnWatch
        case paired(serial: UInt32)
        case directory(total: Int, selected: [ANTFSFileEntry])
        case progress(index: UInt16, received: Int, total: Int)
        case saved(path: String, entry: ANTFSFileEntry)
        case imported(FileReport)
        case fileFailed(ANTFSFileEntry, String)
    }

    /// What a session did.
    public struct Summary: Sendable, Encodable {
        public var watchSerial: UInt32?
        public var watchName: String?
        public var filesOnWatch = 0
        public var fetched: [String] = []
        public var imported: [FileReport] = []
        public var failed: [String] = []
        /// Bytes of the files downloaded, the time spent downloading them (from the directory to
        /// the last file, less the imports) and the time their imports took, in seconds.
        public var bytes = 0
        public var downloadSeconds = 0.0
        public var importSeconds = 0.0

        enum CodingKeys: String, CodingKey {
            case watchSerial = "watch_serial", watchName = "watch_name", filesOnWatch = "files_on_watch", fetched, imported, failed,
                 bytes, downloadSeconds = "download_s", importSeconds = "import_s"
        }
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    private enum Input: Sendable {
        case stick(ANTStick.Event)
        case ended(String?)
        case tick
    }

    /// Runs one session: finds a stick, waits for a watch, downloads what is new. `sink` tells the
    /// stored checkpoint; `files` imports what is fetched.
    public func run(sink: some RecordSink, files: any FileSink) async throws -> Summary {
        let context: USBContext
        do { context = try USBContext() } catch { throw Failure(description: "\(error)") }
        let present: [USBDeviceInfo]
        do { present = try context.devices(matching: ANTStickModel.matches) } catch { throw Failure(description: "\(error)") }
        let sticks = present.filter { info in
            guard let wanted = configuration.sticks else { return true }
            return wanted.contains(info.sysfsName) || wanted.contains(String(format: "%03d:%03d", info.bus, info.address))
        }
        guard let info = sticks.first else { throw Failure(description: "no ANT stick plugged in") }
        var stickConfiguration = ANTStickController.Configuration(networkKey: configuration.networkKey)
        stickConfiguration.antFSSearch = true
        stickConfiguration.silence = 30
        let stick = ANTStick(context: context, configuration: stickConfiguration)
        let (commands, command) = AsyncStream.makeStream(of: ANTStick.Command.self)
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        let runner = Task {
            do throws(ANTStick.Failure) {
                try await stick.run(info, commands: commands) { event in input.yield(.stick(event)) }
                input.yield(.ended(nil))
            } catch {
                input.yield(.ended(error.description))
            }
        }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                input.yield(.tick)
            }
        }
        let deadline = ContinuousClock.now + configuration.timeout
        defer {
            ticker.cancel()
            runner.cancel()
        }
        var host = ANTFSHost(configuration: ANTFSHost.Configuration(hostSerial: configuration.hostSerial,
                                                                    allowsPairing: configuration.allowPairing))
        var assembler = ANTBurstAssembler(limit: ANTFSDirectory.maxSize + 64)
        var summary = Summary()
        var transferStarted: ContinuousClock.Instant?
        var fetched = ANTFSFetched()
        var running = false
        var linked = false
        let start = ContinuousClock.now
        func now() -> Double {
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        let report = configuration.onEvent ?? { _ in }

        for await item in inputs {
            if Task.isCancelled { break }
            if ContinuousClock.now > deadline { throw Failure(description: "no session ended within \(configuration.timeout)") }
            var feed: [ANTFSHost.Input] = []
            switch item {
            case .ended(let reason):
                throw Failure(description: reason ?? "the stick's run ended")
            case .tick:
                if running { feed.append(.tick(now: now())) }
            case .stick(let event):
                switch event {
                case .opened(let opened, _): report(.stickOpened(opened))
                case .running:
                    running = true
                    report(.searching)
                    feed.append(.tick(now: now()))
                case .data(.broadcast(let m), _) where m.channel == 0:
                    feed.append(.beacon(m.data))
                case .data(.acknowledged(let m), _) where m.channel == 0:
                    feed.append(.beacon(m.data))
                case .data(.burst(let packet), _) where packet.channel == 0:
                    switch assembler.add(packet) {
                    case .complete(let bytes), .droppedThenComplete(_, let bytes): feed.append(.burst(bytes))
                    case .incomplete, .dropped: break
                    }
                case .channelEvent(0, .transferTxCompleted):
                    feed.append(.transferCompleted)
                case .channelEvent(0, .transferTxFailed):
                    feed.append(.transferFailed)
                case .channelEvent(0, .transferRxFailed):
                    assembler.reset()
                default:
                    break
                }
            }
            for one in feed {
                var queue = host.handle(one)
                while !queue.isEmpty {
                    let action = queue.removeFirst()
                    switch action {
                    case .sendAcknowledged(let bytes):
                        command.yield(.send([ANTCommand.acknowledged(channel: 0, bytes)]))
                    case .sendBurst(let bytes):
                        command.yield(.send(ANTCommand.burst(channel: 0, bytes)))
                    case .retune(let frequency, let periodCode):
                        linked = true
                        var messages = [ANTCommand.setRFFrequency(0, frequency)]
                        if let period = ANTFSBeacon.channelPeriod(periodCode: periodCode) {
                            messages.append(ANTCommand.setChannelPeriod(0, period: period))
                        }
                        command.yield(.configure(messages))
                    case .identified(let serial, let name):
                        summary.watchSerial = serial
                        summary.watchName = name
                        report(.identified(serial: serial, name: name))
                        fetched = (try? await sink.checkpoint(ANTFSFetched.self, device: ANTFSFetched.device(serial: serial))) ?? nil
                            ?? ANTFSFetched()
                    case .loadPasskey(let serial):
                        queue += host.handle(.passkey(loadPasskey(serial)))
                    case .storePasskey(let serial, let passkey):
                        do { try storePasskey(serial, passkey) } catch {
                            summary.failed.append("storing the passkey: \(error)")
                        }
                        report(.paired(serial: serial))
                    case .askUserToAcceptOnWatch:
                        report(.acceptOnWatch)
                    case .directory(let entries):
                        let selected = select(entries, fetched: fetched)
                        summary.filesOnWatch = entries.count
                        transferStarted = ContinuousClock.now
                        report(.directory(total: entries.count, selected: selected))
                        queue += host.handle(.select(selected.map(\.index)))
                    case .downloadProgress(let index, let received, let total):
                        report(.progress(index: index, received: received, total: total))
                    case .fileDownloaded(let entry, let bytes):
                        let serial = summary.watchSerial ?? 0
                        summary.bytes += bytes.count
                        do {
                            let path = try save(bytes, entry: entry, serial: serial)
                            report(.saved(path: path, entry: entry))
                            var next = fetched
                            next.files = Array(Set(next.files + [entry.fetchKey])).sorted()
                            let importStarted = ContinuousClock.now
                            let outcome = await files.importFile(path, checkpoint: next, device: ANTFSFetched.device(serial: serial))
                            summary.importSeconds += (ContinuousClock.now - importStarted).inSeconds
                            if !outcome.notStored { fetched = next }
                            summary.fetched.append(entry.suggestedFileName)
                            summary.imported.append(outcome)
                            report(.imported(outcome))
                        } catch {
                            summary.failed.append("\(entry.suggestedFileName): \(error)")
                            report(.fileFailed(entry, "\(error)"))
                        }
                    case .fileFailed(let entry, let error):
                        summary.failed.append("\(entry.suggestedFileName): \(error)")
                        report(.fileFailed(entry, "\(error)"))
                    case .finished:
                        if let transferStarted {
                            summary.downloadSeconds = max(0, (ContinuousClock.now - transferStarted).inSeconds - summary.importSeconds)
                        }
                        return summary
                    case .failed(let error):
                        // A watch linked to this host stays with it until told otherwise (about a
                        // minute): say goodbye, so that the next session finds it in link state.
                        if linked {
                            command.yield(.send([ANTCommand.acknowledged(channel: 0, ANTFSCommand.disconnect(type: 0).bytes)]))
                            try? await Task.sleep(for: .milliseconds(500))
                        }
                        throw Failure(description: "\(error)")
                    }
                }
            }
        }
        throw CancellationError()
    }

    /// The entries to fetch: readable FIT files not fetched before, dated from `since` on (a file
    /// whose date is the watch's own counter, not a calendar date, is fetched whatever `since`).
    func select(_ entries: [ANTFSFileEntry], fetched: ANTFSFetched) -> [ANTFSFileEntry] {
        let known = Set(fetched.files)
        return entries.filter { entry in
            guard entry.isFIT, entry.flags.contains(.read), !known.contains(entry.fetchKey) else { return false }
            if let since = configuration.since, let time = entry.unixTime { return Double(time) >= since.timeIntervalSince1970 }
            return true
        }
    }

    private func watchFolder(_ serial: UInt32) -> String { configuration.folder + "/\(serial)" }

    func loadPasskey(_ serial: UInt32) -> [UInt8]? {
        guard let text = try? String(contentsOfFile: watchFolder(serial) + "/passkey", encoding: .utf8) else { return nil }
        return Hex.bytes(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func storePasskey(_ serial: UInt32, _ passkey: [UInt8]) throws {
        let text = passkey.map { String(format: "%02x", $0) }.joined() + "\n"
        try PrivateFiles.write(Data(text.utf8), to: watchFolder(serial) + "/passkey")
    }

    func save(_ bytes: [UInt8], entry: ANTFSFileEntry, serial: UInt32) throws -> String {
        let path = watchFolder(serial) + "/" + entry.suggestedFileName
        try PrivateFiles.write(Data(bytes), to: path)
        return path
    }

    /// This host's ANT-FS serial number, kept in `folder/host-serial` (made at random the first
    /// time): the watches pair with it.
    public static func hostSerial(folder: String) throws -> UInt32 {
        let path = folder + "/host-serial"
        if let text = try? String(contentsOfFile: path, encoding: .utf8), let serial = UInt32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            return serial
        }
        let serial = UInt32.random(in: 0x1000_0000...0xFFFF_FFFE)
        try PrivateFiles.write(Data("\(serial)\n".utf8), to: path)
        return serial
    }
}
