import ANTProtocol
import TestSupport
import Testing
@testable import ANTDriver

/// The stick controller, pure: fed the stick's replies and the time, checked on what it sends and
/// says. A small scripted stick answers like the real one.
@Suite struct ANTStickControllerTests {
    typealias Controller = ANTStickController
    static let key: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
    static let capabilities = ANTReply.capabilities(try! ANTCapabilities(payload: [0x08, 0x03, 0x00, 0xBA, 0x36, 0x00]))

    /// The messages among `actions`.
    func sent(_ actions: [Controller.Action]) -> [ANTMessage] {
        actions.compactMap { if case .send(let m) = $0 { return m } else { return nil } }
    }

    /// The `40` answer a stick gives to `message` (a configuration command).
    func response(to message: ANTMessage, code: UInt8 = 0) -> ANTReply {
        .channelResponse(channel: message.payload.first ?? 0, messageID: message.id, code: ANTResponseCode(code))
    }

    /// Drives the start-up as a stick that answers everything; returns the actions after the
    /// serial number (identified, then the first configuration command).
    func identify(_ c: inout Controller, now: Double = 0) -> [Controller.Action] {
        #expect(sent(c.start(now: now)) == [ANTCommand.reset()])
        #expect(sent(c.received(.startup(reason: 0x20), now: now)) == [ANTCommand.requestMessage(channel: 0, ANTMessageID.capabilities)])
        #expect(sent(c.received(Self.capabilities, now: now)) == [ANTCommand.requestMessage(channel: 0, ANTMessageID.version)])
        #expect(sent(c.received(.version("AP2USB1.05"), now: now)) == [ANTCommand.requestMessage(channel: 0, ANTMessageID.serialNumber)])
        return c.received(.serialNumber(3_871_234_567), now: now)
    }

    /// Answers every configuration command with success until the controller runs; returns
    /// everything it sent and the `running` action.
    func configure(_ c: inout Controller, first: [Controller.Action], now: Double = 0, refuse: (ANTMessage) -> UInt8 = { _ in 0 })
        -> (sent: [ANTMessage], actions: [Controller.Action])
    {
        var all: [ANTMessage] = []
        var actions = first
        var seen: [Controller.Action] = first
        while let message = sent(actions).last {
            all.append(message)
            actions = c.received(response(to: message, code: refuse(message)), now: now)
            seen += actions
        }
        return (all, seen)
    }

    @Test("data of an open channel is handed out while the others are configured, also when answers come late")
    func dataWhileConfiguringWithLateAnswers() {
        let plans = [Controller.ChannelPlan(.heartRate), Controller.ChannelPlan(.bikePower), Controller.ChannelPlan(.bikeSpeedCadence)]
        for late in [false, true] {
            var c = Controller(configuration: .init(networkKey: Self.key, channels: plans))
            var actions = identify(&c)
            var now = 0.0
            var dataIn = 0, dataOut = 0, channel0Open = false
            while let message = sent(actions).last {
                if late {
                    // The answer comes after the response timeout: the command is sent again
                    // first, then both answers arrive.
                    now += 1.5
                    actions = c.tick(now: now)
                    for a in actions { if case .data = a { dataOut += 1 } }
                }
                if channel0Open {
                    dataIn += 1
                    let data = ANTReply.broadcast(ANTDataMessage(channel: 0, data: [4, 0xFF, 0, 0, 0, 0, UInt8(dataIn), 90]))
                    for a in c.received(data, now: now) { if case .data = a { dataOut += 1 } }
                }
                if message.id == ANTMessageID.openChannel, message.payload.first == 0 { channel0Open = true }
                actions = c.received(response(to: message), now: now)
                if late { actions += c.received(response(to: message), now: now) }
                for a in actions { if case .data = a { dataOut += 1 } }
                if actions.contains(where: { if case .running = $0 { true } else { false } }) { break }
            }
            #expect(dataIn > 5 && dataOut == dataIn, "late \(late): \(dataIn) data messages in, \(dataOut) handed out")
        }
    }

    @Test("start-up: reset, startup, capabilities, version, serial; identified with what the stick said")
    func identifies() {
        var c = Controller(configuration: .init())
        let actions = identify(&c)
        let info = Controller.StickInfo(capabilities: try! ANTCapabilities(payload: [0x08, 0x03, 0x00, 0xBA, 0x36, 0x00]),
                                        version: "AP2USB1.05", serialNumber: 3_871_234_567, startupReason: 0x20, resets: 0)
        // Without a network key nothing is configured: identified, then running with no channel.
        #expect(actions == [.identified(info), .running(channels: [:], extendedMessages: false)])
    }

    @Test("a stick that ignores resets is reset again, and after three it is unresponsive")
    func resetsAreRetried() {
        var c = Controller(configuration: .init())
        #expect(sent(c.start(now: 0)) == [ANTCommand.reset()])
        #expect(c.tick(now: 0.5).isEmpty)
        #expect(sent(c.tick(now: 1.0)) == [ANTCommand.reset()])
        #expect(sent(c.tick(now: 2.0)) == [ANTCommand.reset()])
        #expect(c.tick(now: 3.0) == [.unresponsive("no startup message after 3 resets")])
        // Anything before the startup message (another program's channel still open) is ignored.
        var d = Controller(configuration: .init())
        _ = d.start(now: 0)
        #expect(d.received(.broadcast(ANTDataMessage(channel: 0, data: [0, 0, 0, 0, 0, 0, 0, 0])), now: 0.1).isEmpty)
        #expect(sent(d.tick(now: 1.0)) == [ANTCommand.reset()])
        #expect(sent(d.received(.startup(reason: 0), now: 1.2)) == [ANTCommand.requestMessage(channel: 0, ANTMessageID.capabilities)])
    }

    @Test("capabilities are required; version and serial number are not")
    func optionalAnswers() {
        var c = Controller(configuration: .init())
        _ = c.start(now: 0)
        _ = c.received(.startup(reason: 0x20), now: 0)
        // No capabilities: asked three times, then unresponsive.
        #expect(sent(c.tick(now: 1)).count == 1)
        #expect(sent(c.tick(now: 2)).count == 1)
        #expect(c.tick(now: 3) == [.unresponsive("no answer to the capabilities request")])

        var d = Controller(configuration: .init())
        _ = d.start(now: 0)
        _ = d.received(.startup(reason: 0x20), now: 0)
        _ = d.received(Self.capabilities, now: 0)
        // The version never comes: after its retries the serial number is asked for.
        _ = d.tick(now: 1)
        _ = d.tick(now: 2)
        #expect(sent(d.tick(now: 3)) == [ANTCommand.requestMessage(channel: 0, ANTMessageID.serialNumber)])
        _ = d.tick(now: 4)
        _ = d.tick(now: 5)
        let last = d.tick(now: 6)
        guard case .identified(let info) = last.first else { Issue.record("not identified: \(last)"); return }
        #expect(info.version == nil && info.serialNumber == nil && info.capabilities?.maxChannels == 8)
    }

    @Test("with a key: network key, extended messages, then each channel's commands, each answered")
    func configuresChannels() {
        let plans = [Controller.ChannelPlan(.heartRate), Controller.ChannelPlan(.bikePower, deviceNumber: 0x1_0000 + 12345)]
        var c = Controller(configuration: .init(networkKey: Self.key, channels: plans))
        let (messages, actions) = configure(&c, first: identify(&c))
        var expected = [ANTCommand.setNetworkKey(network: 0, key: Self.key), ANTCommand.libConfig(0xC0)]
        for (channel, plan) in plans.enumerated() {
            let ch = UInt8(channel)
            expected += [
                ANTCommand.assignChannel(ch, type: .receive, network: 0),
                ANTCommand.setChannelID(ch, ANTChannelID(deviceNumber: channel == 0 ? 0 : 12345, deviceType: plan.parameters.deviceType,
                                                         transmissionType: 0)),
                ANTCommand.setChannelPeriod(ch, period: plan.parameters.period),
                ANTCommand.setSearchTimeout(ch, 10), ANTCommand.setLowPrioritySearchTimeout(ch, 255),
                ANTCommand.setRFFrequency(ch, 57), ANTCommand.openChannel(ch),
            ]
        }
        #expect(messages == expected)
        #expect(actions.last == .running(channels: [0: plans[0], 1: plans[1]], extendedMessages: true))
        #expect(c.phase == .running)
    }

    @Test("a refused channel is left out; a refused network key ends the stick's run; optional refusals pass")
    func refusals() {
        let plans = [Controller.ChannelPlan(.heartRate), Controller.ChannelPlan(.bikeSpeed)]
        var c = Controller(configuration: .init(networkKey: Self.key, channels: plans))
        let (messages, actions) = configure(&c, first: identify(&c)) { message in
            // The stick knows no 6E (older firmware) and refuses channel 0's period.
            if message.id == ANTMessageID.libConfig { return 40 }
            return message.id == ANTMessageID.channelPeriod && message.payload.first == 0 ? 21 : 0
        }
        #expect(!messages.contains(ANTCommand.openChannel(0)) && messages.contains(ANTCommand.openChannel(1)))
        #expect(actions.contains { if case .problem(let text) = $0 { return text.contains("channel 0 left out") } else { return false } })
        #expect(actions.last == .running(channels: [1: plans[1]], extendedMessages: false))

        var d = Controller(configuration: .init(networkKey: Self.key, channels: plans))
        let first = identify(&d)
        #expect(sent(first) == [ANTCommand.setNetworkKey(network: 0, key: Self.key)])
        #expect(d.received(response(to: ANTCommand.setNetworkKey(network: 0, key: Self.key), code: 41), now: 0)
            == [.failed("the stick refused the network key (\(ANTResponseCode(41)))")])
    }

    @Test("more sensors than channels: the rest are reported and left out")
    func tooManyChannels() {
        let plans = ANTPlusChannelParameters.all.map { Controller.ChannelPlan($0) }
            + [Controller.ChannelPlan(.heartRate, deviceNumber: 7)]
        var c = Controller(configuration: .init(networkKey: Self.key, channels: plans))
        let (_, actions) = configure(&c, first: identify(&c))
        #expect(actions.contains(.problem("the stick has 8 channels: heart_rate:7 left out")))
        guard case .running(let channels, _) = actions.last else { Issue.record("not running"); return }
        #expect(channels.count == 8)
    }

    @Test("running: data is handed out, a closed channel is reopened, a silent stick is probed")
    func running() {
        var c = Controller(configuration: .init(networkKey: Self.key, channels: [.init(.heartRate)]))
        _ = configure(&c, first: identify(&c))
        let broadcast = ANTReply.broadcast(ANTDataMessage(channel: 0, data: [0, 0xFF, 0xFF, 0xFF, 0, 4, 1, 60]))
        #expect(c.received(broadcast, now: 1) == [.data(broadcast)])
        // The search timed out: closed, and opened again.
        let closed = c.received(.channelEvent(channel: 0, code: .channelClosed), now: 2)
        #expect(closed == [.channelEvent(channel: 0, code: .channelClosed), .send(ANTCommand.openChannel(0))])
        #expect(c.received(response(to: ANTCommand.openChannel(0)), now: 2.1).isEmpty)
        // 10 s without a word: a status request; its answer keeps the stick.
        #expect(c.tick(now: 11).isEmpty)
        #expect(sent(c.tick(now: 12.2)) == [ANTCommand.requestMessage(channel: 0, ANTMessageID.channelStatus)])
        #expect(c.received(.channelStatus(channel: 0, state: 2), now: 12.3).isEmpty)
        // Silent again, and no answer: unresponsive.
        _ = c.tick(now: 22.4)
        _ = c.tick(now: 23.4)
        _ = c.tick(now: 24.4)
        #expect(c.tick(now: 25.4) == [.unresponsive("silent for 10 s and no answer to a status request")])
    }

    @Test("data of an open channel is handed out while the other channels are still configured")
    func dataWhileConfiguring() {
        let plans = [Controller.ChannelPlan(.heartRate), Controller.ChannelPlan(.bikePower)]
        var c = Controller(configuration: .init(networkKey: Self.key, channels: plans))
        var actions = identify(&c)
        let broadcast = ANTReply.broadcast(ANTDataMessage(channel: 0, data: [0, 0xFF, 0xFF, 0xFF, 0, 4, 1, 60]))
        // Before channel 0 is open: not ours.
        #expect(c.received(broadcast, now: 0) == [])
        while let message = sent(actions).last, message != ANTCommand.openChannel(0) {
            actions = c.received(response(to: message), now: 0)
        }
        _ = c.received(response(to: ANTCommand.openChannel(0)), now: 0)
        #expect(c.phase == .configuring)
        #expect(c.received(broadcast, now: 0.1) == [.data(broadcast)])
    }

    @Test("scan mode: channel 0 in the receive scan mode, every sensor's data handed out")
    func scanMode() {
        var c = Controller(configuration: .init(networkKey: Self.key, scanMode: true))
        let (messages, actions) = configure(&c, first: identify(&c))
        #expect(messages.suffix(4) == [
            ANTCommand.assignChannel(0, type: .receive, network: 0),
            ANTCommand.setChannelID(0, ANTChannelID(deviceNumber: 0, deviceType: 0, transmissionType: 0)),
            ANTCommand.setRFFrequency(0, 57), ANTCommand.openRxScanMode(),
        ])
        #expect(actions.last == .running(channels: [:], extendedMessages: true))
    }

    @Test("random replies and ticks never trap and always end in running, unresponsive or failed")
    func randomInputs() {
        var rng = SeededGenerator(seed: 0xA17)
        for _ in 0..<300 {
            var c = Controller(configuration: .init(networkKey: Self.key, channels: [.init(.heartRate), .init(.bikePower)]))
            var now = 0.0
            var ended = false
            var actions = c.start(now: now)
            for _ in 0..<400 where !ended {
                now += Double(rng.next() % 1500) / 1000
                let replies: [ANTReply] = [
                    .startup(reason: 0), Self.capabilities, .version("x"), .serialNumber(1),
                    .channelResponse(channel: UInt8(rng.next() % 3), messageID: UInt8(0x40 + rng.next() % 0x30), code: ANTResponseCode(UInt8(rng.next() % 3))),
                    .channelEvent(channel: UInt8(rng.next() % 3), code: ANTResponseCode(UInt8(rng.next() % 9))),
                    .broadcast(ANTDataMessage(channel: 0, data: [0, 0, 0, 0, 0, 0, 0, 0])), .channelStatus(channel: 0, state: 3),
                ]
                // Mostly the right answer to what was sent, sometimes anything, sometimes nothing.
                if let message = sent(actions).last, rng.next() % 4 != 0 {
                    actions = message.id == ANTMessageID.resetSystem ? c.received(.startup(reason: 0), now: now)
                        : message.id == ANTMessageID.requestMessage ? c.received(replies[Int(rng.next() % 4)], now: now)
                        : c.received(response(to: message), now: now)
                } else if rng.next() % 2 == 0 {
                    actions = c.received(replies[Int(rng.next() % UInt64(replies.count))], now: now)
                } else {
                    actions = c.tick(now: now)
                }
                ended = actions.contains { if case .unresponsive = $0 { true } else if case .failed = $0 { true } else { false } }
            }
            #expect(ended || c.phase == .running || c.phase == .configuring || c.phase == .identifying,
                    "stuck in \(c.phase)")
        }
    }
}
