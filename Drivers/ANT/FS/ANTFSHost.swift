/// The host side of one ANT-FS session with a watch: a pure state machine (no I/O, no clock).
/// The edge feeds it what the ANT channel delivers and the time (``Input``), and carries out what
/// it returns (``Action``).
///
/// The session: wait for a beacon in link state; send LINK (this host's frequency, beacon period
/// and serial number) and, once it went out, retune the channel to that frequency; wait for a
/// beacon in authentication state carrying this host's serial; ask for the watch's serial number
/// and name; ask the caller for the passkey stored for that serial (``Action/loadPasskey(serial:)``)
/// and authenticate with it, or, without one and when pairing is allowed, ask to pair (the user
/// accepts on the watch, which answers with the passkey to store), else fail with
/// ``ANTFSError/notPaired(clientSerial:)``; in transport state, download the directory (file 0)
/// and hand it to the caller (``Action/directory(_:)``), who answers with the indices to fetch
/// (``Input/select(_:)``: the caller compares the entries' ``ANTFSFileEntry/fetchKey`` with what
/// it stored, which may take I/O, so it is an input rather than a closure); download each of them
/// block by block with the CRC checked (``ANTFSDownloadState``); send DISCONNECT; finish.
///
/// Failures and retries: a command whose transfer failed (``Input/transferFailed``) or whose
/// answer did not come in time is sent again, up to `maxAttempts` sends, then the session fails
/// (``ANTFSError/transferFailed(command:attempts:)``, ``ANTFSError/timeout(waitingFor:attempts:)``).
/// A beacon in busy state while an answer is awaited restarts the wait, up to `maxBusyWait` more
/// seconds. The pairing request is not sent again when the user does not answer in
/// `pairingTimeout`. A file the watch refuses, or whose blocks fail their CRC `maxCRCRetries`
/// times in a row, is reported (``Action/fileFailed(entry:error:)``) and the session goes on with
/// the next file; a directory that fails ends the session. When the LINK command's transfer fails
/// every time, the watch may still have received it (only its acknowledgement lost): the host
/// retunes all the same, and fails only if no beacon comes on the new frequency. Every wait has a
/// timeout, so a session always ends, given ticks.
///
/// The edge's part: feed every broadcast as ``Input/beacon(_:)`` and every reassembled burst as
/// ``Input/burst(_:)``; report each send's outcome (``Input/transferCompleted`` or
/// ``Input/transferFailed``); tick at least once a second. A burst from the watch that failed on
/// the way in needs no report: the reply timeout asks again.
///
/// Scope: this host supports the watches that serve FIT files through the ANT-FS directory
/// (Forerunner 310XT, 610, 910XT, FR60, FR70, Swim, vívoactive HR). The Forerunner 405, 405CX and
/// 410 speak the Garmin Device Interface (A/L/D packets) inside ANT-FS; this host does not.
public struct ANTFSHost: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// This host's serial number, sent with LINK and every AUTHENTICATE: the watch pairs
        /// with it, so keep it the same across sessions.
        public var hostSerial: UInt32
        /// The session's frequency (MHz above 2400), sent with LINK. Not 50 (the ANT-FS search
        /// frequency) nor 57 (ANT+).
        public var frequency: UInt8
        /// The session's beacon period code (4 = 8 Hz), sent with LINK.
        public var periodCode: UInt8
        /// Sent with the pairing request; the watch may show it.
        public var hostName: [UInt8]
        /// Whether a watch without a stored passkey may be paired (also set by
        /// ``Input/pairingAllowed(_:)``).
        public var allowsPairing: Bool
        /// The largest block to ask for (0: the watch chooses).
        public var maxBlockSize: UInt32
        /// Files larger than this are refused (the directory's limit is
        /// ``ANTFSDirectory/maxSize``).
        public var maxFileSize: Int
        /// Seconds to wait for the answer to a command (and for a transfer to be reported).
        public var replyTimeout: Double
        /// Seconds to wait for the user to accept pairing on the watch.
        public var pairingTimeout: Double
        /// Seconds to wait for a beacon in the state the session needs next.
        public var beaconTimeout: Double
        /// Seconds to wait for the caller's passkey and selection.
        public var callerTimeout: Double
        /// Seconds by which beacons in busy state may extend a wait for an answer.
        public var maxBusyWait: Double
        /// Sends of one command before the session fails.
        public var maxAttempts: Int
        /// Blocks in a row whose CRC fails before the file fails.
        public var maxCRCRetries: Int

        public init(
            hostSerial: UInt32, frequency: UInt8 = 19, periodCode: UInt8 = 4, hostName: [UInt8] = Array("HealthGate".utf8),
            allowsPairing: Bool = false, maxBlockSize: UInt32 = 0, maxFileSize: Int = ANTFSDownloadState.defaultMaxFileSize,
            replyTimeout: Double = 10, pairingTimeout: Double = 60, beaconTimeout: Double = 30, callerTimeout: Double = 30,
            maxBusyWait: Double = 60, maxAttempts: Int = 4, maxCRCRetries: Int = 3
        ) {
            self.hostSerial = hostSerial
            self.frequency = frequency
            self.periodCode = periodCode
            self.hostName = hostName
            self.allowsPairing = allowsPairing
            self.maxBlockSize = maxBlockSize
            self.maxFileSize = maxFileSize
            self.replyTimeout = replyTimeout
            self.pairingTimeout = pairingTimeout
            self.beaconTimeout = beaconTimeout
            self.callerTimeout = callerTimeout
            self.maxBusyWait = maxBusyWait
            self.maxAttempts = max(1, maxAttempts)
            self.maxCRCRetries = maxCRCRetries
        }
    }

    /// What the edge feeds in.
    public enum Input: Sendable, Equatable {
        /// A broadcast from the watch (8 bytes).
        case beacon([UInt8])
        /// A reassembled burst from the watch (its beacon, then a response).
        case burst([UInt8])
        /// The last `sendAcknowledged` or `sendBurst` went out (ANT: transfer TX completed).
        case transferCompleted
        /// The last `sendAcknowledged` or `sendBurst` failed (ANT: transfer TX failed).
        case transferFailed
        /// The time, in seconds on any monotonic clock; feed it often (every second or faster).
        case tick(now: Double)
        /// The answer to ``Action/loadPasskey(serial:)``: the stored passkey, or nil.
        case passkey([UInt8]?)
        /// Whether pairing is allowed, when it is decided after the start.
        case pairingAllowed(Bool)
        /// The answer to ``Action/directory(_:)``: the indices of the files to download, in
        /// order. Indices not in the directory, and 0, are ignored.
        case select([UInt16])
    }

    /// What the edge does.
    public enum Action: Sendable, Equatable {
        /// Send these 8 bytes as an acknowledged message, then report the transfer.
        case sendAcknowledged([UInt8])
        /// Send these bytes as a burst, then report the transfer.
        case sendBurst([UInt8])
        /// Move the channel to this frequency (MHz above 2400) and beacon period code (see
        /// ``ANTFSBeacon/channelPeriod(periodCode:)``).
        case retune(frequency: UInt8, periodCode: UInt8)
        /// The watch said who it is.
        case identified(serial: UInt32, name: String)
        /// Look up the passkey stored for this watch and answer with ``Input/passkey(_:)``.
        case loadPasskey(serial: UInt32)
        /// Pairing succeeded: store this passkey for this watch.
        case storePasskey(serial: UInt32, passkey: [UInt8])
        /// The pairing request went out: tell the user to accept it on the watch.
        case askUserToAcceptOnWatch
        /// The watch's directory: answer with ``Input/select(_:)``.
        case directory([ANTFSFileEntry])
        /// A block of file `index` arrived: `received` of `total` bytes.
        case downloadProgress(index: UInt16, received: Int, total: Int)
        case fileDownloaded(entry: ANTFSFileEntry, bytes: [UInt8])
        /// This file could not be downloaded; the session goes on with the next one.
        case fileFailed(entry: ANTFSFileEntry, error: ANTFSError)
        /// The session ended: every selected file was downloaded or reported failed.
        case finished
        /// The session ended early.
        case failed(ANTFSError)
    }

    public enum Phase: Sendable, Equatable {
        /// Waiting for a beacon in link state.
        case searching
        /// LINK sent.
        case linking
        /// Retuned: waiting for a beacon in authentication state carrying this host's serial.
        case awaitingAuthentication
        /// The serial number request sent.
        case requestingSerial
        /// Waiting for the caller's passkey.
        case awaitingPasskey(clientSerial: UInt32)
        /// The passkey sent.
        case authenticatingWithPasskey(clientSerial: UInt32)
        /// The pairing request sent: waiting for the user.
        case pairing(clientSerial: UInt32)
        /// Authenticated: waiting for a beacon in transport state.
        case awaitingTransport
        case downloadingDirectory
        /// Waiting for the caller's selection.
        case awaitingSelection
        case downloading(index: UInt16)
        case disconnecting
        case finished
        case failed(ANTFSError)
    }

    /// A wait with a timeout. It starts at the next tick when the time is not known yet.
    struct Timer: Sendable, Equatable {
        var limit: Double
        var since: Double?
        /// When the wait first started (busy beacons restart `since`, not this).
        var first: Double?

        func expired(at now: Double, busyAllowance: Double) -> Bool {
            guard let since, let first else { return false }
            return now - since >= limit || now - first >= limit + busyAllowance
        }
    }

    /// The command on the air or awaiting its answer.
    struct Pending: Sendable, Equatable {
        var command: ANTFSCommand
        var attempts = 1
        var delivered = false
        /// False for LINK and DISCONNECT: done once delivered.
        var expectsReply: Bool
        /// False for the pairing request: once it went out, the user was asked.
        var resendsOnTimeout: Bool
        var replyTimeout: Double
    }

    public let configuration: Configuration
    public private(set) var phase: Phase = .searching
    public private(set) var allowsPairing: Bool
    /// The first link beacon (the watch's device type and manufacturer).
    public private(set) var linkBeacon: ANTFSBeacon?
    public private(set) var clientSerial: UInt32?
    public private(set) var clientName: String?
    public private(set) var directory: ANTFSDirectory?
    /// Inputs that did not fit the phase (a stray burst, a late duplicate, a beacon that does
    /// not decode): counted, never fatal.
    public private(set) var strayInputs = 0
    private var now: Double?
    private var timer: Timer
    private var pending: Pending?
    private var download: ANTFSDownloadState?
    private var queue: [ANTFSFileEntry] = []
    private var current: ANTFSFileEntry?
    /// The last block kept, when its request was sent more than once: another copy of it may
    /// still come.
    private var repeatedAnswer: ANTFSDownloadResponse?

    /// A session that waits for a beacon in link state. Timeouts that are not numbers or below
    /// 0 take their defaults, so that every wait ends.
    public init(configuration: Configuration) {
        var c = configuration
        let defaults = Configuration(hostSerial: c.hostSerial)
        for path in [\Configuration.replyTimeout, \.pairingTimeout, \.beaconTimeout, \.callerTimeout, \.maxBusyWait]
        where !(c[keyPath: path] >= 0) {
            c[keyPath: path] = defaults[keyPath: path]
        }
        c.maxAttempts = max(1, c.maxAttempts)
        self.configuration = c
        allowsPairing = c.allowsPairing
        timer = Timer(limit: c.beaconTimeout)
    }

    /// True once the session ended (finished or failed): every later input is ignored.
    public var isOver: Bool {
        switch phase {
        case .finished, .failed: true
        default: false
        }
    }

    /// Takes one input; returns what to do, in order.
    public mutating func handle(_ input: Input) -> [Action] {
        guard !isOver else { return [] }
        switch input {
        case .tick(let t):
            guard t.isFinite else { return stray() }
            now = t
            if timer.since == nil {
                timer.since = t
                timer.first = t
                return []
            }
            return timer.expired(at: t, busyAllowance: configuration.maxBusyWait) ? timedOut() : []
        case .beacon(let bytes):
            guard let beacon = try? ANTFSBeacon(bytes) else { return stray() }
            return received(beacon)
        case .burst(let bytes):
            guard let (_, response) = try? ANTFSResponse.decode(bytes) else { return stray() }
            return received(response)
        case .transferCompleted:
            return transferCompleted()
        case .transferFailed:
            guard let p = pending, !p.delivered else { return stray() }
            guard p.attempts < configuration.maxAttempts else {
                if case .link = p.command { return retune() }
                if case .disconnect = p.command { return finish() }
                return fail(.transferFailed(command: p.command.description, attempts: p.attempts))
            }
            return resend()
        case .passkey(let passkey):
            guard case .awaitingPasskey(let serial) = phase else { return stray() }
            if let passkey, !passkey.isEmpty {
                phase = .authenticatingWithPasskey(clientSerial: serial)
                return send(.authenticate(type: .passkey, hostSerial: configuration.hostSerial, data: passkey))
            }
            guard allowsPairing else { return fail(.notPaired(clientSerial: serial)) }
            phase = .pairing(clientSerial: serial)
            let request = ANTFSCommand.authenticate(type: .pairing, hostSerial: configuration.hostSerial, data: configuration.hostName)
            return send(request, replyTimeout: configuration.pairingTimeout, resendsOnTimeout: false) + [.askUserToAcceptOnWatch]
        case .pairingAllowed(let allowed):
            allowsPairing = allowed
            return []
        case .select(let indices):
            guard phase == .awaitingSelection, let directory else { return stray() }
            var seen = Set<UInt16>()
            queue = []
            for index in indices where index != 0 && !seen.contains(index) {
                seen.insert(index)
                if let entry = directory.entries.first(where: { $0.index == index }) { queue.append(entry) }
            }
            return nextFile()
        }
    }

    // MARK: - Inputs by phase

    private mutating func received(_ beacon: ANTFSBeacon) -> [Action] {
        let ours = beacon.hostSerial == configuration.hostSerial
        if beacon.state == .busy, ours, pending?.delivered == true, let now {
            timer.since = now  // the watch is working on it
            return []
        }
        switch phase {
        case .searching where beacon.state == .link:
            linkBeacon = beacon
            phase = .linking
            return send(
                .link(frequency: configuration.frequency, period: configuration.periodCode, hostSerial: configuration.hostSerial),
                expectsReply: false)
        case .awaitingAuthentication where beacon.state == .authentication && ours:
            phase = .requestingSerial
            return send(.authenticate(type: .serial, hostSerial: configuration.hostSerial, data: []))
        case .awaitingTransport where beacon.state == .transport && ours:
            phase = .downloadingDirectory
            current = nil
            download = ANTFSDownloadState(
                index: 0, maxBlockSize: configuration.maxBlockSize, maxFileSize: ANTFSDirectory.maxSize,
                maxCRCRetries: configuration.maxCRCRetries)
            return sendNextBlock()
        default:
            return []  // beacons keep coming in every phase
        }
    }

    private mutating func received(_ response: ANTFSResponse) -> [Action] {
        guard pending != nil else { return stray() }
        switch (phase, response) {
        case (.requestingSerial, .authenticate(let result, let serial, let data)):
            guard result == .notAvailable || result == .accept else { return fail(.authenticationRejected(clientSerial: serial)) }
            let name = String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
            clientSerial = serial
            clientName = name
            pending = nil
            phase = .awaitingPasskey(clientSerial: serial)
            wait(configuration.callerTimeout)
            return [.identified(serial: serial, name: name), .loadPasskey(serial: serial)]
        case (.authenticatingWithPasskey(let serial), .authenticate(let result, _, _)):
            guard result == .accept else { return fail(.passkeyRejected(clientSerial: serial)) }
            pending = nil
            phase = .awaitingTransport
            wait(configuration.beaconTimeout)
            return []
        case (.pairing(let serial), .authenticate(let result, _, let passkey)):
            guard result == .accept else { return fail(.pairingRejected(clientSerial: serial)) }
            guard !passkey.isEmpty else { return fail(.unexpectedResponse("pairing was accepted without a passkey")) }
            pending = nil
            phase = .awaitingTransport
            wait(configuration.beaconTimeout)
            return [.storePasskey(serial: serial, passkey: passkey)]
        case (.downloadingDirectory, .download(let block)), (.downloading, .download(let block)):
            return received(block)
        default:
            return stray()
        }
    }

    private mutating func received(_ block: ANTFSDownloadResponse) -> [Action] {
        guard var state = download, let p = pending else { return stray() }
        // A late answer to a request that was sent more than once: its block is kept already.
        // (Download answers do not name the file: the last block of the file before, answered
        // twice, could otherwise pass for the first block of this one.)
        if block.result == .ok && block.offset < state.offset { return stray() }
        if block == repeatedAnswer {
            repeatedAnswer = nil
            return stray()
        }
        // Not ready: ask again, while attempts are left.
        if block.result == .notReady, p.attempts < configuration.maxAttempts { return resend() }
        let outcome: ANTFSDownloadState.Outcome
        do {
            outcome = try state.receive(block)
        } catch {
            download = state
            return fileFailed(error)
        }
        download = state
        if case .accepted = outcome { repeatedAnswer = p.attempts > 1 ? block : nil }
        switch outcome {
        case .retry:
            return sendNextBlock()
        case .accepted(let received, let total):
            let progress = Action.downloadProgress(index: state.index, received: received, total: total)
            guard state.isComplete else { return [progress] + sendNextBlock() }
            pending = nil
            guard let entry = current else {
                // The directory.
                do {
                    let parsed = try ANTFSDirectory.parse(state.bytes)
                    directory = parsed
                    phase = .awaitingSelection
                    wait(configuration.callerTimeout)
                    return [progress, .directory(parsed.entries)]
                } catch {
                    return [progress] + fail(error)
                }
            }
            return [progress, .fileDownloaded(entry: entry, bytes: state.bytes)] + nextFile()
        }
    }

    private mutating func transferCompleted() -> [Action] {
        guard var p = pending, !p.delivered else { return stray() }
        p.delivered = true
        pending = p
        guard p.expectsReply else {
            if case .disconnect = p.command { return finish() }
            return retune()
        }
        wait(p.replyTimeout)
        return []
    }

    private mutating func timedOut() -> [Action] {
        guard let p = pending else {
            let what: String
            switch phase {
            case .searching: what = "a beacon from a watch in link state"
            case .awaitingAuthentication: what = "the watch on frequency \(configuration.frequency) after LINK"
            case .awaitingPasskey: what = "the stored passkey"
            case .awaitingTransport: what = "the watch to enter transport state"
            case .awaitingSelection: what = "the selection of files to download"
            default: what = "the watch"
            }
            return fail(.timeout(waitingFor: what, attempts: 0))
        }
        if !p.delivered, p.attempts >= configuration.maxAttempts {
            if case .link = p.command { return retune() }
        }
        if case .disconnect = p.command, p.attempts >= configuration.maxAttempts { return finish() }
        // A command that never went out goes again, even the pairing request.
        guard p.resendsOnTimeout || !p.delivered, p.attempts < configuration.maxAttempts else {
            let what =
                if !p.delivered {
                    "\(p.command) to go out"
                } else if case .authenticate(.pairing, _, _) = p.command {
                    "the user to accept pairing on the watch"
                } else {
                    "the watch's answer to \(p.command)"
                }
            return fail(.timeout(waitingFor: what, attempts: p.attempts))
        }
        return resend()
    }

    // MARK: - Steps

    private mutating func retune() -> [Action] {
        pending = nil
        phase = .awaitingAuthentication
        wait(configuration.beaconTimeout)
        return [.retune(frequency: configuration.frequency, periodCode: configuration.periodCode)]
    }

    private mutating func nextFile() -> [Action] {
        pending = nil
        guard !queue.isEmpty else {
            current = nil
            download = nil
            phase = .disconnecting
            return send(.disconnect(type: 0), expectsReply: false)
        }
        let entry = queue.removeFirst()
        current = entry
        phase = .downloading(index: entry.index)
        download = ANTFSDownloadState(
            index: entry.index, maxBlockSize: configuration.maxBlockSize, maxFileSize: configuration.maxFileSize,
            maxCRCRetries: configuration.maxCRCRetries)
        return sendNextBlock()
    }

    private mutating func sendNextBlock() -> [Action] {
        guard let request = download?.nextRequest else { return fail(.unexpectedResponse("no block left to ask for")) }
        return send(request)
    }

    private mutating func fileFailed(_ error: ANTFSError) -> [Action] {
        guard let entry = current else { return fail(error) }  // the directory
        return [.fileFailed(entry: entry, error: error)] + nextFile()
    }

    private mutating func send(
        _ command: ANTFSCommand, expectsReply: Bool = true, replyTimeout: Double? = nil, resendsOnTimeout: Bool = true
    ) -> [Action] {
        pending = Pending(
            command: command, expectsReply: expectsReply, resendsOnTimeout: resendsOnTimeout,
            replyTimeout: replyTimeout ?? configuration.replyTimeout)
        wait(configuration.replyTimeout)
        return [transmit(command)]
    }

    private mutating func resend() -> [Action] {
        guard var p = pending else { return [] }
        p.attempts += 1
        p.delivered = false
        pending = p
        wait(configuration.replyTimeout)
        return [transmit(p.command)]
    }

    private func transmit(_ command: ANTFSCommand) -> Action {
        command.isBurst ? .sendBurst(command.bytes) : .sendAcknowledged(command.bytes)
    }

    private mutating func wait(_ limit: Double) {
        timer = Timer(limit: limit, since: now, first: now)
    }

    private mutating func finish() -> [Action] {
        pending = nil
        phase = .finished
        return [.finished]
    }

    private mutating func fail(_ error: ANTFSError) -> [Action] {
        pending = nil
        phase = .failed(error)
        return [.failed(error)]
    }

    private mutating func stray() -> [Action] {
        strayInputs += 1
        return []
    }
}
