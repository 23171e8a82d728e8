import Foundation
import Synchronization
public import BLEHost
public import BluetoothCentral
import Timing

/// The I/O edge of the host stack: one actor owns all protocol state and drives the pure layers of
/// `BLEHost`.
///
///     transport chunks -> H4Framer -> HCI events -> HCICommandQueue / connections / scan
///                                  -> ACL -> ACLReassembler -> LEFixedChannels -> ATTBearer -> GATT
///
/// - The actor runs on its own serial dispatch queue (`QueueExecutor`), not on Swift's cooperative
///   pool: transport chunks and the timer are delivered on that queue and handled at once, so a
///   pool kept busy by other work cannot make a timeout fire before an answer that already arrived.
/// - One timer (a `DispatchSourceTimer`), armed at the earliest deadline of the command queue, the
///   ATT bearers and the runtime's own waits (connect, scan, GATT operations); re-armed after
///   every step.
/// - Every API call that waits on the controller or the peer is bounded and ends with a
///   `BLEError` on timeout; the runtime keeps running.
public actor HostRuntime {
    public struct Configuration: Sendable {
        /// How long an HCI command may stay unanswered (some controllers never answer some).
        public var commandTimeout: Duration = .seconds(2)
        /// ATT transaction timeout of each bearer (30 s in the specification).
        public var attTransactionTimeout: Duration = .seconds(30)
        public var preferredMTU: UInt16 = 247
        /// Own LE random static address; nil picks a fresh one.
        public var randomAddress: DeviceAddress?
        /// Write a btsnoop capture (H4 datalink) of everything exchanged with the controller.
        public var snoopPath: String?
        public var log: (@Sendable (String) -> Void)?
        public init() {}
    }

    public nonisolated let transport: any HCITransport
    public let configuration: Configuration
    public private(set) var controller: ControllerInfo?

    // Protocol state, owned here.
    private var framer = H4Framer()
    private var commands: HCICommandQueue
    private var commandWaiters: [HCIOpcode: [(Result<HCICommandOutcome, BLEError>) -> Void]] = [:]
    private var reassembler = ACLReassembler()
    private var flow = ACLFlowControl(maxDataLength: 27, totalPackets: 1)
    private var links: [UInt16: Link] = [:]
    private var endedLinks: [UInt64: HCIStatus?] = [:]
    private var nextLinkID: UInt64 = 1
    private var scan: ScanState?
    private var nextScanID: UInt64 = 1
    private var pendingConnect: PendingConnect?
    /// Callers of `connect` waiting for the pending attempt to end, in order, by ticket.
    private var connectWaiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    private var nextConnectTicket: UInt64 = 0
    private var isClosed = false
    private var snoop: FileHandle?

    // The executor and the one timer.
    private let executor: QueueExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let clockBase = DispatchTime.now().uptimeNanoseconds
    private var timers: [UInt64: (at: HostInstant, fire: () -> Void)] = [:]
    private var nextTimerID: UInt64 = 1
    private let timer: any DispatchSourceTimer
    private var armedDeadline: HostInstant?
    private var started = false

    /// Counters for tests and metrics.
    public private(set) var statistics = Statistics()
    public struct Statistics: Sendable, Equatable {
        public var commandsSent = 0
        public var commandTimeouts = 0
        public var eventsReceived = 0
        public var aclPacketsSent = 0
        public var aclPacketsReceived = 0
        public var notifications = 0
        public var connectionUpdatesAccepted = 0
        public var timerWakeups = 0
    }

    public init(transport: any HCITransport, configuration: Configuration = Configuration()) {
        self.transport = transport
        self.configuration = configuration
        self.commands = HCICommandQueue(configuration: .init(timeout: configuration.commandTimeout))
        let executor = QueueExecutor(label: "healthgate.ble.host")
        self.executor = executor
        let timer = DispatchSource.makeTimerSource(queue: executor.queue)
        self.timer = timer
        timer.schedule(deadline: .distantFuture)
        timer.setEventHandler { [weak self] in
            self?.assumeIsolated { $0.timerFired() }
        }
        timer.resume()
    }

    /// Opens the transport `address` names.
    public static func open(_ address: TransportAddress, configuration: Configuration = Configuration()) throws(BLEError) -> HostRuntime {
        do {
            return HostRuntime(transport: try HCITransports.open(address), configuration: configuration)
        } catch {
            throw .transport(error)
        }
    }

    // MARK: - Lifecycle

    /// Starts reading and runs the init sequence: Reset, Read BD_ADDR, Read Local Version, LE Read
    /// Buffer Size (Read Buffer Size when the LE buffers are shared), Set Event Mask, LE Set Event
    /// Mask, LE Set Random Address (a random static address).
    @discardableResult
    public func start() async throws(BLEError) -> ControllerInfo {
        if !started {
            started = true
            if let path = configuration.snoopPath {
                _ = FileManager.default.createFile(atPath: path, contents: Data(BTSnoop.Writer().header),
                                                   attributes: [.posixPermissions: 0o600])
                snoop = FileHandle(forWritingAtPath: path)
                _ = try? snoop?.seekToEnd()
            }
            transport.start(on: executor.queue) { [weak self] chunk in
                self?.assumeIsolated { runtime in
                    if let chunk { runtime.ingest(chunk) } else { runtime.transportEnded() }
                }
            }
        }
        _ = try await complete(.reset)
        guard case .bdAddr(let address) = try await complete(.readBDAddr) else { throw .unexpectedReply(.readBDAddr, "no BD_ADDR") }
        var version: HCICommandReturn.LocalVersion?
        if case .localVersion(let v) = try? await complete(.readLocalVersion) { version = v }
        guard case .leBufferSize(let le) = try await complete(.leReadBufferSize) else {
            throw .unexpectedReply(.leReadBufferSize, "no buffer size")
        }
        var shared: HCICommandReturn.BufferSize?
        if le.aclDataPacketLength == 0 || le.totalACLDataPackets == 0,
           case .bufferSize(let b) = try await complete(.readBufferSize) {
            shared = b
        }
        flow = ACLFlowControl(le: le, shared: shared)
        for handle in links.keys { flow.open(handle: handle) }
        _ = try await complete(.setEventMask(0x3DBF_F807_FFFB_FFFF))
        _ = try await complete(.leSetEventMask(0x0000_0000_000F_FFFF))
        let own = configuration.randomAddress ?? Self.randomStaticAddress()
        _ = try await complete(.leSetRandomAddress(own))
        let info = ControllerInfo(address: address, version: version, aclDataLength: flow.maxDataLength,
                                  aclPackets: flow.totalPackets, randomAddress: own)
        controller = info
        log("controller \(address.text), ACL \(info.aclDataLength) x \(info.aclPackets), own address \(own.text)")
        return info
    }

    /// Closes the transport; every waiter fails with `.closed`.
    public func close() {
        transport.close()
        shutdown()
    }

    public static func randomStaticAddress() -> DeviceAddress {
        var value = UInt64.random(in: 1..<(1 << 46) - 1)
        value |= 0b11 << 46
        return DeviceAddress(value, kind: .random)
    }

    // MARK: - HCI commands

    /// Sends a command and waits for its Command Complete or Command Status (bounded by the
    /// command timeout, plus the time spent queued behind other commands).
    public func send(_ command: HCICommand) async throws(BLEError) -> HCICommandOutcome {
        guard !isClosed else { throw .closed }
        let result: Result<HCICommandOutcome, BLEError> = await withCheckedContinuation { continuation in
            enqueue(command) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Sends a command that must complete with success; returns its return parameters.
    public func complete(_ command: HCICommand) async throws(BLEError) -> HCICommandReturn {
        switch try await send(command) {
        case .completed(let r): return r
        case .started: return .none
        case .failed(let status): throw .commandFailed(command.opcode, status)
        case .malformed(let e): throw .unexpectedReply(command.opcode, e.description)
        }
    }

    private func started(_ command: HCICommand) async throws(BLEError) {
        switch try await send(command) {
        case .started, .completed: return
        case .failed(let status): throw .commandFailed(command.opcode, status)
        case .malformed(let e): throw .unexpectedReply(command.opcode, e.description)
        }
    }

    /// Queues a command; `done` gets its outcome exactly once (also for fire-and-forget commands,
    /// so replies stay matched in order per opcode).
    private func enqueue(_ command: HCICommand, done: @escaping (Result<HCICommandOutcome, BLEError>) -> Void = { _ in }) {
        guard !isClosed else { return done(.failure(.closed)) }
        do {
            let actions = try commands.enqueue(command, now: now())
            commandWaiters[command.opcode, default: []].append(done)
            handle(actions)
        } catch {
            done(.failure(.commandQueueFull))
        }
        rearm()
    }

    private func handle(_ actions: [HCICommandQueue.Action]) {
        for action in actions {
            switch action {
            case .send(let command):
                statistics.commandsSent += 1
                write(command.h4Packet)
            case .complete(let opcode, let outcome):
                popWaiter(opcode)?(.success(outcome))
            case .timedOut(let opcode):
                statistics.commandTimeouts += 1
                log("HCI command \(opcode) timed out")
                popWaiter(opcode)?(.failure(.commandTimedOut(opcode)))
            case .unmatched(let opcode):
                log("reply to \(opcode) that nobody waits for")
            }
        }
    }

    private func popWaiter(_ opcode: HCIOpcode) -> ((Result<HCICommandOutcome, BLEError>) -> Void)? {
        guard var list = commandWaiters[opcode], !list.isEmpty else { return nil }
        let first = list.removeFirst()
        commandWaiters[opcode] = list.isEmpty ? nil : list
        return first
    }

    // MARK: - Input

    private func ingest(_ chunk: [UInt8]) {
        let packets: [H4Packet]
        do {
            packets = try framer.feed(chunk)
        } catch {
            log("H4 framing lost: \(error); closing")
            close()
            return
        }
        for packet in packets {
            record(packet, received: true)
            switch packet.type {
            case .event:
                statistics.eventsReceived += 1
                do { handle(try HCIEvent.decode(packet.bytes)) } catch { log("event: \(error)") }
            case .acl:
                statistics.aclPacketsReceived += 1
                do {
                    let acl = try ACLPacket.decode(packet.bytes)
                    if let (handle, pdu) = try reassembler.receive(acl) { l2cap(pdu, handle: handle) }
                } catch {
                    log("ACL: \(error)")
                }
            default:
                log("ignored H4 packet type \(packet.type)")
            }
        }
        rearm()
    }

    private func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete, .commandStatus:
            handle(commands.receive(event, now: now()))
        case .disconnectionComplete(let status, let handle, let reason):
            if status.isSuccess { linkDown(handle: handle, reason: reason) }
        case .numberOfCompletedPackets(let entries):
            sendACL(flow.completed(entries))
        case .le(.connectionComplete(let cc)):
            connectionComplete(cc)
        case .le(.advertisingReports(let reports)):
            advertisingReports(reports)
        case .le(.remoteConnectionParameterRequest(let handle, let min, let max, let latency, let timeout)):
            let p = LEConnectionParameters(intervalMin: min, intervalMax: max, maxLatency: latency, supervisionTimeout: timeout)
            enqueue(.leRemoteConnectionParameterRequestReply(handle: handle, p))
        default:
            break
        }
    }

    private func transportEnded() {
        log("transport \(transport.name) closed")
        shutdown()
    }

    private func shutdown() {
        guard !isClosed else { return }
        isClosed = true
        _ = commands.reset()
        let waiters = commandWaiters.values.flatMap { $0 }
        commandWaiters = [:]
        for w in waiters { w(.failure(.closed)) }
        for handle in Array(links.keys) { linkDown(handle: handle, reason: nil) }
        if let p = pendingConnect {
            pendingConnect = nil
            p.done(.failure(.closed))
        }
        for w in connectWaiters { w.continuation.resume() }
        connectWaiters = []
        scan?.continuation.finish()
        scan = nil
        let fired = timers.values.map(\.fire)
        timers = [:]
        for f in fired { f() }
        timer.cancel()
        try? snoop?.close()
        snoop = nil
    }

    // MARK: - Output

    private func write(_ packet: H4Packet) {
        guard !isClosed else { return }
        record(packet, received: false)
        do {
            try transport.send(packet.encoded)
        } catch {
            log("write failed: \(error); closing")
            close()
        }
    }

    private func record(_ packet: H4Packet, received: Bool) {
        guard let snoop else { return }
        let micros = Int64(Date().timeIntervalSince1970 * 1e6)
        let r = BTSnoop.Record.h4(packet, received: received, timestamp: micros + BTSnoop.unixEpochOffset)
        try? snoop.write(contentsOf: Data(BTSnoop.Writer().record(r)))
    }

    private func sendACL(_ packets: [ACLPacket]) {
        for p in packets {
            statistics.aclPacketsSent += 1
            write(p.h4Packet)
        }
    }

    private func sendL2CAP(_ frame: L2CAPFrame, handle: UInt16) {
        do {
            sendACL(try flow.enqueue(frame.encoded, handle: handle))
        } catch {
            log("ACL queue for 0x\(String(handle, radix: 16)): \(error)")
        }
    }

    // MARK: - Timer

    func now() -> HostInstant {
        HostInstant(nanoseconds: DispatchTime.now().uptimeNanoseconds &- clockBase)
    }

    @discardableResult
    private func addTimer(after delay: Duration, _ fire: @escaping () -> Void) -> UInt64 {
        let id = nextTimerID
        nextTimerID += 1
        timers[id] = (now().advanced(by: delay), fire)
        rearm()
        return id
    }

    private func cancelTimer(_ id: UInt64?) {
        if let id { timers[id] = nil }
    }

    /// Arms the one timer at the earliest deadline (or disarms it).
    private func rearm() {
        var deadline = commands.nextDeadline
        for link in links.values { if let d = link.bearer.nextDeadline, deadline.map({ d < $0 }) ?? true { deadline = d } }
        for t in timers.values where deadline.map({ t.at < $0 }) ?? true { deadline = t.at }
        guard deadline != armedDeadline, !isClosed else { return }
        armedDeadline = deadline
        timer.schedule(deadline: deadline.map { DispatchTime(uptimeNanoseconds: clockBase &+ $0.nanoseconds) } ?? .distantFuture,
                       leeway: .milliseconds(1))
    }

    private func timerFired() {
        statistics.timerWakeups += 1
        armedDeadline = nil
        let t = now()
        handle(commands.tick(now: t))
        for link in Array(links.values) { bearerActions(link, link.bearer.tick(now: t)) }
        let due = timers.filter { $0.value.at <= t }.sorted { $0.value.at < $1.value.at }
        for (id, entry) in due {
            timers[id] = nil
            entry.fire()
        }
        rearm()
    }

    /// Waits for a callback-style operation, with a timeout (nil: as long as it takes, only for
    /// waits that the runtime itself ends, such as a link going down) and until the calling task
    /// is cancelled (`.cancelled`); `start` gets a `Once` to resolve.
    func wait<T: Sendable>(timeout: Duration?, onTimeout: BLEError,
                           _ start: (Once<T>) -> Void) async throws(BLEError) -> T {
        let waiting = Mutex<Once<T>?>(nil)
        let queue = executor.queue
        let result: Result<T, BLEError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let once = Once<T>(continuation)
                waiting.withLock { $0 = once }
                if Task.isCancelled { return once.resolve(.failure(.cancelled)) }
                if let timeout {
                    let id = addTimer(after: timeout) { once.resolve(.failure(onTimeout)) }
                    once.onResolve = { self.cancelTimer(id) }
                }
                start(once)
            }
        } onCancel: {
            // The caller's task was cancelled: the wait ends with `.cancelled`, resolved on the
            // actor's own queue (its serial executor), where every resolve runs.
            guard let once = waiting.withLock({ $0 }) else { return }
            queue.async { once.resolve(.failure(.cancelled)) }
        }
        return try result.get()
    }

    func log(_ message: String) {
        configuration.log?(message)
    }
}

/// A continuation resumed at most once (by a result, a timeout or a shutdown). Used only from the
/// runtime actor.
final class Once<T: Sendable>: @unchecked Sendable {
    private var continuation: CheckedContinuation<Result<T, BLEError>, Never>?
    /// Runs on the runtime actor (every `resolve` does).
    var onResolve: (() -> Void)?
    init(_ continuation: CheckedContinuation<Result<T, BLEError>, Never>) { self.continuation = continuation }
    var isResolved: Bool { continuation == nil }
    func resolve(_ result: Result<T, BLEError>) {
        guard let c = continuation else { return }
        continuation = nil
        onResolve?()
        onResolve = nil
        c.resume(returning: result)
    }
}

// MARK: - Links, scanning, connecting

/// Mutated only on the runtime actor (it never leaves it); `@unchecked Sendable` lets isolated
/// closures that the actor stores capture it.
final class Link: @unchecked Sendable {
    let id: UInt64
    let handle: UInt16
    let peer: DeviceAddress
    var bearer: ATTBearer
    var callbacks: [ATTRequestID: (Result<ATTPDU, ATTRequestError>) -> Void] = [:]
    var discovery: GATTDiscovery?
    var database: GATTDatabase?
    /// Per value handle: the streams to feed, and whether to finish them when the link ends.
    var subscribers: [UInt16: [UInt64: (continuation: AsyncStream<GATTNotification>.Continuation, finishOnDisconnect: Bool)]] = [:]
    var nextSubscriberID: UInt64 = 1
    var disconnectWaiters: [(HCIStatus?) -> Void] = []
    init(id: UInt64, handle: UInt16, peer: DeviceAddress, bearer: ATTBearer) {
        self.id = id
        self.handle = handle
        self.peer = peer
        self.bearer = bearer
    }
}

struct ScanState {
    var id: UInt64
    var continuation: AsyncStream<DiscoveredDevice>.Continuation
    var seen: [DeviceAddress: DiscoveredDevice] = [:]
    var timer: UInt64?
}

struct PendingConnect {
    var peer: DeviceAddress
    var done: (Result<GATTClient, BLEError>) -> Void
    var cancelled = false
    var timer: UInt64?
    var attempt: ConnectAttempt?
}

/// The outcome of one connection attempt. The controller may report the connection before the
/// caller is back from sending LE Create Connection (the actor runs the event in between), so
/// an early result waits here for the caller. Used only on the runtime actor.
final class ConnectAttempt: @unchecked Sendable {
    private var result: Result<GATTClient, BLEError>?
    private var once: Once<GATTClient>?

    func finish(_ r: Result<GATTClient, BLEError>) {
        if let once { once.resolve(r) } else if result == nil { result = r }
    }

    /// Hands the outcome to `once` now if it is known, else when it is; true if it was known.
    func await(_ once: Once<GATTClient>) -> Bool {
        if let result {
            once.resolve(result)
            return true
        }
        self.once = once
        return false
    }
}

extension HostRuntime {
    // MARK: Scanning

    /// Scans (active, own random address) for `duration`; the stream yields each device once,
    /// and again when a later report adds a name or service UUIDs. Accepts legacy (0x02) and
    /// extended (0x0D) advertising reports. Ending the iteration early stops the scan. A new
    /// scan replaces a running one.
    public func scan(duration: Duration, active: Bool = true) async throws(BLEError) -> AsyncStream<DiscoveredDevice> {
        guard !isClosed else { throw .closed }
        guard controller != nil else { throw .notStarted }
        if let old = scan { stopScan(old.id) }
        _ = try await complete(.leSetScanParameters(LEScanParameters(type: active ? .active : .passive, interval: 0x0030, window: 0x0030)))
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveredDevice.self, bufferingPolicy: .unbounded)
        let id = nextScanID
        nextScanID += 1
        var state = ScanState(id: id, continuation: continuation)
        state.timer = addTimer(after: duration) { self.stopScan(id) }
        scan = state
        continuation.onTermination = { [weak self] _ in
            Task { await self?.stopScan(id) }
        }
        do {
            _ = try await complete(.leSetScanEnable(enabled: true, filterDuplicates: false))
        } catch {
            stopScan(id)
            throw error
        }
        return stream
    }

    private func stopScan(_ id: UInt64) {
        guard let s = scan, s.id == id else { return }
        scan = nil
        cancelTimer(s.timer)
        enqueue(.leSetScanEnable(enabled: false, filterDuplicates: false))
        s.continuation.finish()
    }

    fileprivate func advertisingReports(_ reports: [AdvertisingReport]) {
        guard var s = scan else { return }
        for r in reports {
            let ad = (try? AdvertisingData.parse(r.data)) ?? AdvertisingData()
            var device = s.seen[r.address] ?? DiscoveredDevice(
                address: r.address, addressType: r.addressType, name: nil, serviceUUIDs: [], rssi: r.rssi,
                isConnectable: r.isConnectable, fromExtendedReport: !r.fromLegacyEvent, serviceData: [], manufacturerData: [])
            let before = device
            if device.name == nil || !ad.localNameIsShortened, let name = ad.localName { device.name = name }
            for u in ad.serviceUUIDs where !device.serviceUUIDs.contains(u) { device.serviceUUIDs.append(u) }
            for d in ad.serviceData where !device.serviceData.contains(d) { device.serviceData.append(d) }
            for d in ad.manufacturerData where !device.manufacturerData.contains(d) { device.manufacturerData.append(d) }
            device.txPower = ad.txPower ?? device.txPower
            device.flags = ad.flags ?? device.flags
            if !r.isScanResponse { device.isConnectable = r.isConnectable }
            device.rssi = r.rssi ?? device.rssi
            let isNew = s.seen[r.address] == nil
            s.seen[r.address] = device
            if isNew || device.name != before.name || device.serviceUUIDs != before.serviceUUIDs {
                s.continuation.yield(device)
            }
        }
        scan = s
    }

    // MARK: Connecting

    /// LE Create Connection (own random address) to `peer`, bounded by `timeout`; on timeout the
    /// attempt is cancelled (LE Create Connection Cancel). One create is pending at a time: other
    /// calls wait their turn.
    public func connect(to peer: DeviceAddress, timeout: Duration = .seconds(5),
                        parameters: LEConnectionParameters = LEConnectionParameters()) async throws(BLEError) -> GATTClient {
        guard !isClosed else { throw .closed }
        guard controller != nil else { throw .notStarted }
        while pendingConnect != nil, !isClosed {
            let ticket = nextConnectTicket
            nextConnectTicket += 1
            await withTaskCancellationHandler {
                await withCheckedContinuation { c in
                    if Task.isCancelled { c.resume() } else { connectWaiters.append((ticket, c)) }
                }
            } onCancel: {
                Task { await self.leaveConnectQueue(ticket) }
            }
            if Task.isCancelled { throw .cancelled }
        }
        guard !isClosed else { throw .closed }
        // Hold the slot while the create command itself is in flight.
        let attempt = ConnectAttempt()
        pendingConnect = PendingConnect(peer: peer, done: { attempt.finish($0) }, attempt: attempt)
        do {
            try await started(.leCreateConnection(LECreateConnectionParameters(peer: peer, scanInterval: 0x0030, scanWindow: 0x0030,
                                                                                ownAddressType: 1, connection: parameters)))
        } catch {
            releaseConnectSlot()
            // Command Disallowed: the controller is still initiating an attempt this host gave
            // up (its cancel lost, refused or sent too early). Cancel it now, or every later
            // create is refused the same way for as long as the controller keeps trying.
            if error == .commandFailed(.leCreateConnection, .commandDisallowed) {
                log("connect to \(peer.text): the controller is still connecting; cancelling that attempt")
                enqueue(.leCreateConnectionCancel)
            }
            throw error
        }
        // Cancelling the calling task abandons the attempt at once (a recorder stopping while a
        // device is away must not wait out the timeout).
        let result: Result<GATTClient, BLEError> = await withTaskCancellationHandler {
            do throws(BLEError) {
                return .success(try await wait(timeout: timeout + .seconds(3), onTimeout: .connectTimedOut(peer)) { (once: Once<GATTClient>) in
                    if attempt.await(once) { return }
                    guard pendingConnect?.attempt === attempt, pendingConnect?.cancelled == false else { return }
                    pendingConnect?.timer = addTimer(after: timeout) { self.abandonConnect(.connectTimedOut(peer)) }
                    if Task.isCancelled { abandonConnect(.cancelled) }
                })
            } catch {
                return .failure(error)
            }
        } onCancel: {
            Task { await self.abandonConnect(.cancelled, peer: peer) }
        }
        return try result.get()
    }

    /// Gives up the pending connection attempt (to `peer`, when given) with `error`: the caller
    /// gets the error now, and the controller is told to cancel.
    private func abandonConnect(_ error: BLEError, peer: DeviceAddress? = nil) {
        guard var p = pendingConnect, !p.cancelled, peer == nil || p.peer == peer else { return }
        p.cancelled = true
        if let t = p.timer { cancelTimer(t) }
        p.done(.failure(error))
        p.done = { _ in }
        // Free the slot if the controller never reports the cancelled attempt.
        p.timer = addTimer(after: .seconds(2)) {
            if self.pendingConnect?.cancelled == true { self.releaseConnectSlot() }
        }
        pendingConnect = p
        log("connect to \(p.peer.text): \(error); cancelling")
        enqueue(.leCreateConnectionCancel)
    }

    private func releaseConnectSlot() {
        if let t = pendingConnect?.timer { cancelTimer(t) }
        pendingConnect = nil
        if !connectWaiters.isEmpty { connectWaiters.removeFirst().continuation.resume() }
    }

    /// A waiting caller was cancelled: it stops waiting for its turn.
    private func leaveConnectQueue(_ ticket: UInt64) {
        guard let index = connectWaiters.firstIndex(where: { $0.ticket == ticket }) else { return }
        connectWaiters.remove(at: index).continuation.resume()
    }

    fileprivate func connectionComplete(_ cc: LEConnectionComplete) {
        guard let p = pendingConnect else {
            if cc.status.isSuccess {
                log("unexpected connection 0x\(String(cc.handle, radix: 16)) from \(cc.peer.text); disconnecting")
                enqueue(.disconnect(handle: cc.handle, reason: .remoteUserTerminated))
            }
            return
        }
        if cc.status == .unknownConnectionIdentifier, !p.cancelled {
            // The end of an attempt cancelled before this one, reported after the slot was freed
            // for this one (a cancel's only report): not this attempt's end.
            log("connect to \(p.peer.text): a late report of an earlier cancelled attempt; still connecting")
            return
        }
        releaseConnectSlot()
        guard cc.status.isSuccess else {
            p.done(.failure(p.cancelled ? .connectTimedOut(p.peer) : .connectionFailed(p.peer, cc.status)))
            return
        }
        let link = Link(id: nextLinkID, handle: cc.handle, peer: cc.peer,
                        bearer: ATTBearer(configuration: .init(preferredMTU: configuration.preferredMTU,
                                                               transactionTimeout: configuration.attTransactionTimeout)))
        nextLinkID += 1
        links[cc.handle] = link
        flow.open(handle: cc.handle)
        log("connected to \(cc.peer.text) as 0x\(String(cc.handle, radix: 16))")
        bearerActions(link, link.bearer.start(now: now()))
        if p.cancelled {
            enqueue(.disconnect(handle: cc.handle, reason: .remoteUserTerminated))
            return
        }
        p.done(.success(GATTClient(runtime: self, linkID: link.id, handle: cc.handle, peer: cc.peer)))
    }

    private func linkDown(handle: UInt16, reason: HCIStatus?) {
        guard let link = links.removeValue(forKey: handle) else { return }
        log("link 0x\(String(handle, radix: 16)) to \(link.peer.text) down, reason \(reason.map(\.description) ?? "transport closed")")
        endedLinks[link.id] = reason
        reassembler.drop(handle: handle)
        sendACL(flow.close(handle: handle))
        bearerActions(link, link.bearer.disconnected())
        if var d = link.discovery {
            link.discovery = nil
            _ = d.disconnected()
        }
        for subs in link.subscribers.values { for s in subs.values where s.finishOnDisconnect { s.continuation.finish() } }
        link.subscribers = [:]
        let waiters = link.disconnectWaiters
        link.disconnectWaiters = []
        for w in waiters { w(reason) }
    }

    // MARK: L2CAP and ATT

    private func l2cap(_ pdu: [UInt8], handle: UInt16) {
        guard let link = links[handle] else { return }
        let frame: L2CAPFrame
        do { frame = try L2CAPFrame.decode(pdu) } catch { log("L2CAP: \(error)"); return }
        for action in LEFixedChannels.route(frame, handle: handle) {
            switch action {
            case .att(let bytes):
                bearerActions(link, link.bearer.receive(bytes, now: now()))
            case .send(let frame):
                sendL2CAP(frame, handle: handle)
            case .command(let command):
                statistics.connectionUpdatesAccepted += 1
                enqueue(command)
            case .ignored(let channel, let reason):
                log("L2CAP channel 0x\(String(channel, radix: 16)): \(reason)")
            }
        }
    }

    private func bearerActions(_ link: Link, _ actions: [ATTBearer.Action]) {
        for action in actions {
            switch action {
            case .send(let pdu):
                if links[link.handle] === link { sendL2CAP(L2CAPFrame(channel: L2CAPFrame.attChannel, payload: pdu), handle: link.handle) }
            case .response(let id, let result):
                link.callbacks.removeValue(forKey: id)?(result)
            case .notification(let handle, let value), .indication(let handle, let value):
                deliver(link, handle: handle, value: value)
            case .mtuChanged(let mtu):
                link.discovery?.mtu = mtu
            case .unexpected(let what):
                log("ATT on 0x\(String(link.handle, radix: 16)): \(what)")
            case .closed:
                log("ATT bearer on 0x\(String(link.handle, radix: 16)) timed out; disconnecting")
                enqueue(.disconnect(handle: link.handle, reason: .remoteUserTerminated))
            }
        }
    }

    private func deliver(_ link: Link, handle: UInt16, value: [UInt8]) {
        statistics.notifications += 1
        guard let subs = link.subscribers[handle], !subs.isEmpty else { return }
        let uuid = link.database?.characteristic(valueHandle: handle)?.uuid ?? BluetoothUUID(0)
        let n = GATTNotification(peer: link.peer, characteristic: uuid, valueHandle: handle, value: value, receivedAt: Date())
        for s in subs.values { s.continuation.yield(n) }
    }

    private func attRequest(_ link: Link, _ pdu: ATTPDU, _ done: @escaping (Result<ATTPDU, ATTRequestError>) -> Void) throws(BLEError) {
        do {
            let (id, actions) = try link.bearer.request(pdu, now: now())
            link.callbacks[id] = done
            bearerActions(link, actions)
            rearm()
        } catch {
            throw error == .closed ? .disconnected(nil) : .request("\(error)")
        }
    }

    private func link(_ id: UInt64, _ handle: UInt16) throws(BLEError) -> Link {
        guard let link = links[handle], link.id == id else {
            throw .disconnected(endedLinks[id] ?? nil)
        }
        return link
    }

    // MARK: GATT operations (called by GATTClient)

    func discover(linkID: UInt64, handle: UInt16, timeout: Duration) async throws(BLEError) -> GATTDatabase {
        let link = try link(linkID, handle)
        return try await wait(timeout: timeout, onTimeout: .timedOut("GATT discovery")) { (once: Once<GATTDatabase>) in
            var discovery = GATTDiscovery()
            discovery.mtu = link.bearer.mtu
            let actions = discovery.start()
            link.discovery = discovery
            driveDiscovery(link, actions, once)
        }
    }

    private func driveDiscovery(_ link: Link, _ actions: [GATTDiscovery.Action], _ once: Once<GATTDatabase>) {
        for action in actions {
            switch action {
            case .request(let pdu):
                do {
                    try attRequest(link, pdu) { result in
                        guard var d = link.discovery, !once.isResolved else { return }
                        let next = d.receive(result)
                        link.discovery = d
                        self.driveDiscovery(link, next, once)
                    }
                } catch {
                    link.discovery = nil
                    once.resolve(.failure(error))
                }
            case .finished(let db):
                link.database = db
                link.discovery = nil
                once.resolve(.success(db))
            case .failed(let e):
                link.discovery = nil
                once.resolve(.failure(e == .disconnected ? .disconnected(endedLinks[link.id] ?? nil) : .discovery(e)))
            default:
                break
            }
        }
    }

    private func characteristic(_ link: Link, _ uuid: BluetoothUUID) throws(BLEError) -> GATTCharacteristic {
        guard let db = link.database else { throw .notDiscovered }
        guard let c = db.characteristics(uuid).first else { throw .characteristicNotFound(uuid) }
        return c
    }

    func read(linkID: UInt64, handle: UInt16, characteristic uuid: BluetoothUUID, timeout: Duration) async throws(BLEError) -> [UInt8] {
        let link = try link(linkID, handle)
        let c = try characteristic(link, uuid)
        return try await wait(timeout: timeout, onTimeout: .timedOut("read \(uuid)")) { (once: Once<[UInt8]>) in
            readValue(link, c.valueHandle, [], once)
        }
    }

    /// Read, then Read Blob while a response fills the MTU (up to 512 bytes).
    private func readValue(_ link: Link, _ valueHandle: UInt16, _ sofar: [UInt8], _ once: Once<[UInt8]>) {
        let pdu: ATTPDU = sofar.isEmpty ? .readRequest(handle: valueHandle) : .readBlobRequest(handle: valueHandle, offset: UInt16(sofar.count))
        do {
            try attRequest(link, pdu) { result in
                switch result {
                case .success(.readResponse(let bytes)), .success(.readBlobResponse(let bytes)):
                    let all = sofar + bytes
                    if bytes.count == Int(link.bearer.mtu) - 1 && all.count < 512 {
                        self.readValue(link, valueHandle, all, once)
                    } else {
                        once.resolve(.success(all))
                    }
                case .success(let other):
                    once.resolve(.failure(.request("unexpected \(other)")))
                case .failure(.peer(let code, let h)):
                    if !sofar.isEmpty && (code == .invalidOffset || code == .attributeNotLong) { return once.resolve(.success(sofar)) }
                    once.resolve(.failure(.att(code, handle: h)))
                case .failure(.timeout):
                    once.resolve(.failure(.timedOut("ATT read")))
                case .failure(.closed):
                    once.resolve(.failure(.disconnected(self.endedLinks[link.id] ?? nil)))
                }
            }
        } catch {
            once.resolve(.failure(error))
        }
    }

    func write(linkID: UInt64, handle: UInt16, characteristic uuid: BluetoothUUID, value: [UInt8], timeout: Duration) async throws(BLEError) {
        let c = try characteristic(try link(linkID, handle), uuid)
        try await write(linkID: linkID, handle: handle, valueHandle: c.valueHandle, value: value, timeout: timeout)
    }

    func write(linkID: UInt64, handle: UInt16, valueHandle: UInt16, value: [UInt8], timeout: Duration) async throws(BLEError) {
        let link = try link(linkID, handle)
        _ = try await wait(timeout: timeout, onTimeout: .timedOut("write 0x\(String(valueHandle, radix: 16))")) { (once: Once<Bool>) in
            do throws(BLEError) {
                try attRequest(link, .writeRequest(handle: valueHandle, value: value)) { result in
                    switch result {
                    case .success(.writeResponse): once.resolve(.success(true))
                    case .success(let other): once.resolve(.failure(.request("unexpected \(other)")))
                    case .failure(.peer(let code, let h)): once.resolve(.failure(.att(code, handle: h)))
                    case .failure(.timeout): once.resolve(.failure(.timedOut("ATT write")))
                    case .failure(.closed): once.resolve(.failure(.disconnected(self.endedLinks[link.id] ?? nil)))
                    }
                }
            } catch {
                once.resolve(.failure(error))
            }
        }
    }

    func subscribe(linkID: UInt64, handle: UInt16, characteristic uuid: BluetoothUUID,
                   timeout: Duration) async throws(BLEError) -> AsyncStream<GATTNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: GATTNotification.self, bufferingPolicy: .bufferingNewest(4096))
        do {
            let sid = try await subscribe(linkID: linkID, handle: handle, characteristic: uuid, into: continuation,
                                          finishOnDisconnect: true, timeout: timeout)
            let valueHandle = try characteristic(try link(linkID, handle), uuid).valueHandle
            continuation.onTermination = { [weak self] _ in
                Task { await self?.unsubscribe(linkHandle: handle, linkID: linkID, valueHandle: valueHandle, id: sid) }
            }
        } catch {
            continuation.finish()
            throw error
        }
        return stream
    }

    /// Registers `continuation` for the characteristic's values, then writes its CCCD (notify, or
    /// indicate when that is all it offers). Registering first loses no value sent right after
    /// the write. Returns the subscriber id.
    func subscribe(linkID: UInt64, handle: UInt16, characteristic uuid: BluetoothUUID,
                   into continuation: AsyncStream<GATTNotification>.Continuation, finishOnDisconnect: Bool,
                   timeout: Duration) async throws(BLEError) -> UInt64 {
        let link = try link(linkID, handle)
        let c = try characteristic(link, uuid)
        guard c.canNotify || c.canIndicate else { throw .cannotSubscribe(uuid, "neither notify nor indicate") }
        guard let cccd = c.cccdHandle else { throw .cannotSubscribe(uuid, "no Client Characteristic Configuration descriptor") }
        let sid = link.nextSubscriberID
        link.nextSubscriberID += 1
        link.subscribers[c.valueHandle, default: [:]][sid] = (continuation, finishOnDisconnect)
        let mode: UInt8 = c.canNotify ? 0x01 : 0x02
        do {
            try await write(linkID: linkID, handle: handle, valueHandle: cccd, value: [mode, 0], timeout: timeout)
        } catch {
            link.subscribers[c.valueHandle]?[sid] = nil
            throw error
        }
        return sid
    }

    private func unsubscribe(linkHandle: UInt16, linkID: UInt64, valueHandle: UInt16, id: UInt64) {
        guard let link = links[linkHandle], link.id == linkID else { return }
        link.subscribers[valueHandle]?[id] = nil
    }

    func disconnect(linkID: UInt64, handle: UInt16, timeout: Duration) async throws(BLEError) -> HCIStatus? {
        guard let link = links[handle], link.id == linkID else { return endedLinks[linkID] ?? nil }
        try await started(.disconnect(handle: handle, reason: .remoteUserTerminated))
        return try await disconnected(linkID: linkID, handle: handle, timeout: timeout)
    }

    /// Waits until the link is down; returns the reason (nil when the transport closed).
    func disconnected(linkID: UInt64, handle: UInt16, timeout: Duration?) async throws(BLEError) -> HCIStatus? {
        guard let link = links[handle], link.id == linkID else { return endedLinks[linkID] ?? nil }
        return try await wait(timeout: timeout, onTimeout: .timedOut("waiting for disconnection")) { (once: Once<HCIStatus?>) in
            link.disconnectWaiters.append { once.resolve(.success($0)) }
        }
    }

    func mtu(linkID: UInt64, handle: UInt16) -> UInt16? {
        guard let link = links[handle], link.id == linkID else { return nil }
        return link.bearer.mtu
    }

    func database(linkID: UInt64, handle: UInt16) -> GATTDatabase? {
        guard let link = links[handle], link.id == linkID else { return nil }
        return link.database
    }
}
