public import ANTProtocol

/// What HealthGate asks of one ANT stick, and what it says back, as a pure state machine: fed the
/// stick's replies and the time, it returns what to send and what happened. No I/O, no clock
/// (``ANTStick`` is its edge).
///
/// **Start.** Reset (`4A 00`) and wait for the startup message (`6F`), resetting again when it does
/// not come in time (a stick left in a bad state by another program often ignores the first), up
/// to `resets` times; then the capabilities (required), the firmware version and serial number
/// (optional: a stick that does not answer those is still used). A stick that answers none of the
/// resets or not its capabilities is ``Action/unresponsive(_:)``: the edge resets it on the bus and
/// opens it again.
///
/// **Configure.** The network key (when one is configured: without it only the stick itself is
/// known), extended messages (the channel id of the sender with every data message, through
/// `6E 80` or the older `66 01`), then either the receive scan mode on channel 0 (every sensor
/// in range, for `ant scan`) or one receive channel per planned sensor, each command checked
/// against its `40` response. A channel the stick refuses is reported and left out.
///
/// **Run.** Data messages are handed out with their channel; a channel the stick closes (its
/// search timed out) is opened again; after `silence` without any message from the stick it is
/// asked for a channel's status, and a stick that does not answer is unresponsive.
public struct ANTStickController: Sendable {
    /// One receive channel to open: a sensor kind and, unless 0, the sensor's 20-bit ANT+
    /// device number.
    public struct ChannelPlan: Hashable, Sendable, CustomStringConvertible {
        public var parameters: ANTPlusChannelParameters
        public var deviceNumber: UInt32

        public init(_ parameters: ANTPlusChannelParameters, deviceNumber: UInt32 = 0) {
            self.parameters = parameters
            self.deviceNumber = deviceNumber & 0xF_FFFF
        }

        /// The channel id the stick searches with: the low 16 bits of the device number and a
        /// wildcard transmission type. A number's top 4 bits travel in the transmission type's
        /// high nibble, but a stick matches a non-zero transmission type whole, low nibble (the
        /// sensor's own, 1 or 5) included, so it is left open here and the extended data a
        /// found sensor sends is checked instead (``matches(_:)``).
        public var channelID: ANTChannelID {
            ANTChannelID(deviceNumber: UInt16(truncatingIfNeeded: deviceNumber), deviceType: parameters.deviceType, transmissionType: 0)
        }

        /// Whether the sensor a message came from (its extended data) is one this channel wants.
        public func matches(_ id: ANTChannelID) -> Bool {
            deviceNumber == 0 || id.extendedDeviceNumber == deviceNumber
        }

        public var description: String {
            parameters.key + (deviceNumber == 0 ? "" : ":\(deviceNumber)")
        }
    }

    public struct Configuration: Sendable {
        /// The ANT+ network key, set on network 0; nil: no network key and no channels.
        public var networkKey: [UInt8]?
        /// Receive channels to open, in order (channel 0, 1, ...), at most the stick's channels.
        public var channels: [ChannelPlan] = []
        /// Instead of channels: the receive scan mode on channel 0 (every sensor in range).
        public var scanMode = false
        /// Instead of channels: channel 0 searching for ANT-FS watches (device type 1, 8 Hz, RF
        /// 50 MHz above 2400, no search timeout); the network key is then the ANT-FS key.
        public var antFSSearch = false
        /// Resets sent before the stick counts as unresponsive, and how long each waits.
        public var resets = 3
        public var startupTimeout = 1.0
        /// How long a command waits for its answer, and how often it is sent again.
        public var responseTimeout = 1.0
        public var commandRetries = 2
        /// Silence of the stick after which it is asked whether it still answers.
        public var silence = 10.0
        /// High-priority search timeout of a channel (units of 2.5 s; 0 = none), and low-priority
        /// (255 = infinite): a channel keeps looking for its sensor without blocking the others.
        public var searchTimeout: UInt8 = 10
        public var lowPrioritySearchTimeout: UInt8 = 255

        public init(networkKey: [UInt8]? = nil, channels: [ChannelPlan] = [], scanMode: Bool = false) {
            self.networkKey = networkKey
            self.channels = channels
            self.scanMode = scanMode
        }
    }

    /// What the stick told about itself.
    public struct StickInfo: Hashable, Sendable {
        public var capabilities: ANTCapabilities?
        public var version: String?
        public var serialNumber: UInt32?
        /// The startup message's reason byte (nil when the stick sent none).
        public var startupReason: UInt8?
        /// Resets it took before the startup message came.
        public var resets: Int

        public init(capabilities: ANTCapabilities? = nil, version: String? = nil, serialNumber: UInt32? = nil,
                    startupReason: UInt8? = nil, resets: Int = 0) {
            self.capabilities = capabilities
            self.version = version
            self.serialNumber = serialNumber
            self.startupReason = startupReason
            self.resets = resets
        }
    }

    public enum Action: Hashable, Sendable {
        case send(ANTMessage)
        /// The stick answered its reset and capabilities: what it is.
        case identified(StickInfo)
        /// Every channel is configured (or the scan mode is on): data follows.
        case running(channels: [UInt8: ChannelPlan], extendedMessages: Bool)
        /// A data message (broadcast, acknowledged or burst packet) on `channel`.
        case data(ANTReply)
        /// A channel event (search timeout, closed, RX failed ...), for counting and status.
        case channelEvent(channel: UInt8, code: ANTResponseCode)
        /// Something went wrong that does not stop the stick (a channel refused).
        case problem(String)
        /// The stick does not answer: reset it on the bus and open it again.
        case unresponsive(String)
        /// Configuration failed for good (the network key refused).
        case failed(String)
    }

    enum Expect: Hashable, Sendable {
        case startup
        /// A message with this id (the answer to a `4D` request).
        case reply(UInt8)
        /// `40 [channel, id, code]`.
        case response(channel: UInt8, id: UInt8)
    }

    struct Command: Hashable, Sendable {
        var message: ANTMessage
        var expect: Expect
        /// An optional command whose answer may never come (version, serial, extended messages).
        var optional = false
        var what: String
    }

    enum Phase: Hashable, Sendable { case idle, resetting, identifying, configuring, running, stopped }

    public let configuration: Configuration
    private(set) var phase = Phase.idle
    private var info = StickInfo()
    private var queue: [Command] = []
    private var inFlight: (command: Command, sentAt: Double, tries: Int)?
    private var lastHeard = 0.0
    private var probing = false
    private var extendedMessages = false
    /// The channels opened, by number.
    private var opened: [UInt8: ChannelPlan] = [:]

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Starts (or starts again, after the stick was reopened) at `now`.
    public mutating func start(now: Double) -> [Action] {
        phase = .resetting
        info = StickInfo()
        queue = []
        opened = [:]
        extendedMessages = false
        probing = false
        lastHeard = now
        return send(Command(message: ANTCommand.reset(), expect: .startup, what: "reset"), now: now)
    }

    /// Feeds one message from the stick.
    public mutating func received(_ reply: ANTReply, now: Double) -> [Action] {
        lastHeard = now
        probing = false
        var actions: [Action] = []
        if let (command, _, _) = inFlight, answers(reply, command.expect) {
            inFlight = nil
            actions += completed(command, reply, now: now)
        } else if phase == .running || (phase == .configuring && !opened.isEmpty) {
            // Data flows as soon as a channel is open, while the others are still configured.
            actions += running(reply, now: now)
        }
        // Anything else before a channel of ours is open (a late answer, data of a channel a
        // previous program left open) is not for us.
        return actions + sendNext(now: now)
    }

    /// What is due at `now`: a command whose answer did not come is sent again or given up, and a
    /// silent stick is asked whether it still answers.
    public mutating func tick(now: Double) -> [Action] {
        if let (command, sentAt, tries) = inFlight {
            let timeout = command.expect == .startup ? configuration.startupTimeout : configuration.responseTimeout
            guard now - sentAt >= timeout else { return [] }
            let limit = command.expect == .startup ? configuration.resets : configuration.commandRetries + 1
            if tries < limit {
                inFlight = (command, now, tries + 1)
                if command.expect == .startup { info.resets = tries }
                return [.send(command.message)]
            }
            inFlight = nil
            return gaveUp(command, now: now)
        }
        if phase == .running, !probing, now - lastHeard >= configuration.silence {
            probing = true
            return send(Command(message: ANTCommand.requestMessage(channel: 0, ANTMessageID.channelStatus),
                                expect: .reply(ANTMessageID.channelStatus), what: "channel status"), now: now)
        }
        return []
    }

    /// Sends channel configuration commands (each checked against its `40` response, in order,
    /// after what is queued): ANT-FS retunes its channel this way.
    public mutating func configure(_ messages: [ANTMessage], now: Double) -> [Action] {
        var actions: [Action] = []
        for message in messages {
            let command = Command(message: message, expect: .response(channel: message.payload.first ?? 0, id: message.id),
                                  what: "\(message)")
            actions += send(command, now: now)
        }
        return actions
    }

    // MARK: - Commands

    private func answers(_ reply: ANTReply, _ expect: Expect) -> Bool {
        switch (expect, reply) {
        case (.startup, .startup): true
        case (.reply(let id), .capabilities): id == ANTMessageID.capabilities
        case (.reply(let id), .version): id == ANTMessageID.version
        case (.reply(let id), .serialNumber): id == ANTMessageID.serialNumber
        case (.reply(let id), .channelStatus): id == ANTMessageID.channelStatus
        case (.reply(let id), .channelID): id == ANTMessageID.channelID
        case (.response(let channel, let id), .channelResponse(let c, let m, _)): channel == c && id == m
        default: false
        }
    }

    private mutating func send(_ command: Command, now: Double) -> [Action] {
        if inFlight == nil {
            inFlight = (command, now, 1)
            return [.send(command.message)]
        }
        queue.append(command)
        return []
    }

    private mutating func sendNext(now: Double) -> [Action] {
        guard inFlight == nil, !queue.isEmpty else { return [] }
        return send(queue.removeFirst(), now: now)
    }

    private mutating func completed(_ command: Command, _ reply: ANTReply, now: Double) -> [Action] {
        switch reply {
        case .startup(let reason):
            info.startupReason = reason
            phase = .identifying
            queue = [
                Command(message: ANTCommand.requestMessage(channel: 0, ANTMessageID.capabilities),
                        expect: .reply(ANTMessageID.capabilities), what: "capabilities"),
                Command(message: ANTCommand.requestMessage(channel: 0, ANTMessageID.version),
                        expect: .reply(ANTMessageID.version), optional: true, what: "version"),
                Command(message: ANTCommand.requestMessage(channel: 0, ANTMessageID.serialNumber),
                        expect: .reply(ANTMessageID.serialNumber), optional: true, what: "serial number"),
            ]
            return []
        case .capabilities(let capabilities):
            info.capabilities = capabilities
            return afterIdentifying(now: now)
        case .version(let version):
            info.version = version
            return afterIdentifying(now: now)
        case .serialNumber(let serial):
            info.serialNumber = serial
            return afterIdentifying(now: now)
        case .channelStatus:
            return []  // the silent stick answered
        case .channelResponse(let channel, let id, let code):
            guard code == .noError else { return refused(command, channel: channel, code: code) }
            if id == ANTMessageID.libConfig || id == ANTMessageID.enableExtendedReceive { extendedMessages = true }
            if id == ANTMessageID.openChannel, !configuration.scanMode, let plan = planned[channel] { opened[channel] = plan }
            return afterConfiguring()
        default:
            return []
        }
    }

    /// The plan by channel number (none in scan mode).
    private var planned: [UInt8: ChannelPlan] {
        guard !configuration.scanMode else { return [:] }
        var plans: [UInt8: ChannelPlan] = [:]
        for (i, plan) in configuration.channels.prefix(maxChannels).enumerated() { plans[UInt8(i)] = plan }
        return plans
    }

    private var maxChannels: Int { Int(info.capabilities?.maxChannels ?? 8) }

    /// Once the stick's answers to the identifying requests are in: it is identified, and the
    /// configuration follows.
    private mutating func afterIdentifying(now: Double) -> [Action] {
        guard phase == .identifying, queue.isEmpty, inFlight == nil else { return [] }
        return identified(now: now)
    }

    private mutating func identified(now: Double) -> [Action] {
        phase = .configuring
        var actions: [Action] = [.identified(info)]
        guard let key = configuration.networkKey else {
            phase = .running
            actions.append(.running(channels: [:], extendedMessages: false))
            return actions
        }
        var commands = [Command(message: ANTCommand.setNetworkKey(network: 0, key: key),
                                expect: .response(channel: 0, id: ANTMessageID.networkKey), what: "network key")]
        if info.capabilities?.supportsExtendedMessages ?? true {
            commands.append(Command(message: ANTCommand.libConfig(ANTCommand.LibConfigFlag.channelID | ANTCommand.LibConfigFlag.rssi),
                                    expect: .response(channel: 0, id: ANTMessageID.libConfig), optional: true, what: "extended messages"))
        }
        if configuration.antFSSearch {
            let search: [(ANTMessage, UInt8, String)] = [
                (ANTCommand.assignChannel(0, type: .receive, network: 0), ANTMessageID.assignChannel, "assign channel 0"),
                (ANTCommand.setChannelID(0, ANTChannelID(deviceNumber: 0, deviceType: 1, transmissionType: 0)), ANTMessageID.channelID,
                 "channel 0 id"),
                (ANTCommand.setChannelPeriod(0, period: 4096), ANTMessageID.channelPeriod, "channel 0 period"),
                (ANTCommand.setSearchTimeout(0, 255), ANTMessageID.searchTimeout, "channel 0 search timeout"),
                (ANTCommand.setRFFrequency(0, 50), ANTMessageID.radioFrequency, "channel 0 frequency"),
                (ANTCommand.setSearchWaveform(0, 0x0035), ANTMessageID.searchWaveform, "channel 0 search waveform"),
                (ANTCommand.openChannel(0), ANTMessageID.openChannel, "open channel 0"),
            ]
            commands += search.map { message, id, what in
                Command(message: message, expect: .response(channel: 0, id: id), optional: id == ANTMessageID.searchWaveform, what: what)
            }
        } else if configuration.scanMode {
            commands += [
                Command(message: ANTCommand.assignChannel(0, type: .receive, network: 0),
                        expect: .response(channel: 0, id: ANTMessageID.assignChannel), what: "assign channel 0"),
                Command(message: ANTCommand.setChannelID(0, ANTChannelID(deviceNumber: 0, deviceType: 0, transmissionType: 0)),
                        expect: .response(channel: 0, id: ANTMessageID.channelID), what: "channel 0 id"),
                Command(message: ANTCommand.setRFFrequency(0, ANTPlus.radioFrequency),
                        expect: .response(channel: 0, id: ANTMessageID.radioFrequency), what: "channel 0 frequency"),
                Command(message: ANTCommand.openRxScanMode(),
                        expect: .response(channel: 0, id: ANTMessageID.openRxScanMode), what: "receive scan mode"),
            ]
        } else {
            for (channel, plan) in planned.sorted(by: { $0.key < $1.key }) {
                commands += channelCommands(channel, plan)
            }
            if configuration.channels.count > maxChannels {
                actions.append(.problem("the stick has \(maxChannels) channels: "
                    + configuration.channels.dropFirst(maxChannels).map(\.description).joined(separator: ", ") + " left out"))
            }
        }
        queue = Array(commands.dropFirst())
        inFlight = (commands[0], now, 1)
        actions.append(.send(commands[0].message))
        return actions
    }

    private func channelCommands(_ channel: UInt8, _ plan: ChannelPlan) -> [Command] {
        let p = plan.parameters
        let id = plan.channelID
        let name = "channel \(channel) (\(plan))"
        return [
            Command(message: ANTCommand.assignChannel(channel, type: .receive, network: 0),
                    expect: .response(channel: channel, id: ANTMessageID.assignChannel), what: "assign " + name),
            Command(message: ANTCommand.setChannelID(channel, id), expect: .response(channel: channel, id: ANTMessageID.channelID),
                    what: "id of " + name),
            Command(message: ANTCommand.setChannelPeriod(channel, period: p.period),
                    expect: .response(channel: channel, id: ANTMessageID.channelPeriod), what: "period of " + name),
            Command(message: ANTCommand.setSearchTimeout(channel, configuration.searchTimeout),
                    expect: .response(channel: channel, id: ANTMessageID.searchTimeout), what: "search timeout of " + name),
            Command(message: ANTCommand.setLowPrioritySearchTimeout(channel, configuration.lowPrioritySearchTimeout),
                    expect: .response(channel: channel, id: ANTMessageID.lowPrioritySearchTimeout), optional: true,
                    what: "low-priority search timeout of " + name),
            Command(message: ANTCommand.setRFFrequency(channel, ANTPlus.radioFrequency),
                    expect: .response(channel: channel, id: ANTMessageID.radioFrequency), what: "frequency of " + name),
            Command(message: ANTCommand.openChannel(channel), expect: .response(channel: channel, id: ANTMessageID.openChannel),
                    what: "open " + name),
        ]
    }

    private mutating func afterConfiguring() -> [Action] {
        guard phase == .configuring, queue.isEmpty, inFlight == nil else { return [] }
        phase = .running
        return [.running(channels: opened, extendedMessages: extendedMessages)]
    }

    /// A command answered with an error code.
    private mutating func refused(_ command: Command, channel: UInt8, code: ANTResponseCode) -> [Action] {
        if command.optional { return afterConfiguring() }
        if case .response(_, let id) = command.expect, id == ANTMessageID.networkKey {
            phase = .stopped
            queue = []
            return [.failed("the stick refused the network key (\(code))")]
        }
        if phase == .running { return [.problem("\(command.what): \(code)")] }
        // A channel the stick refuses: its remaining commands are dropped, the others go on.
        queue.removeAll { queued in
            if case .response(let c, _) = queued.expect { return c == channel }
            return false
        }
        return [.problem("\(command.what) refused: \(code); channel \(channel) left out")] + afterConfiguring()
    }

    /// A command whose answer never came.
    private mutating func gaveUp(_ command: Command, now: Double) -> [Action] {
        switch command.expect {
        case .startup:
            phase = .stopped
            queue = []
            return [.unresponsive("no startup message after \(configuration.resets) resets")]
        case .reply(let id) where id == ANTMessageID.capabilities:
            phase = .stopped
            queue = []
            return [.unresponsive("no answer to the capabilities request")]
        case .reply(let id) where id == ANTMessageID.channelStatus:
            phase = .stopped
            queue = []
            return [.unresponsive("silent for \(Int(configuration.silence)) s and no answer to a status request")]
        default:
            break
        }
        if command.optional {
            let next = phase == .identifying ? afterIdentifying(now: now) : afterConfiguring()
            return next + sendNext(now: now)
        }
        phase = .stopped
        queue = []
        return [.unresponsive("no answer to \(command.what)")]
    }

    // MARK: - Running

    private mutating func running(_ reply: ANTReply, now: Double) -> [Action] {
        switch reply {
        case .broadcast, .acknowledged, .burst:
            return [.data(reply)]
        case .channelEvent(let channel, let code):
            var actions: [Action] = [.channelEvent(channel: channel, code: code)]
            if code == .channelClosed, let plan = opened[channel], !configuration.scanMode {
                // Its search timed out: it looks again (the sensor may come back).
                actions += send(Command(message: ANTCommand.openChannel(channel),
                                        expect: .response(channel: channel, id: ANTMessageID.openChannel),
                                        what: "reopen channel \(channel) (\(plan))"), now: now)
            }
            return actions
        default:
            return []
        }
    }
}
