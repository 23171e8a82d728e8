public import ANTProtocol
public import Foundation
public import USBKit
import Timing

/// The USB ids of the ANT sticks HealthGate drives over libusb.
public enum ANTStickModel {
    public static let vendorID: UInt16 = 0x0FCF
    /// Dynastream ANT USBStick2 (0fcf:1008) and ANT USB-m (0fcf:1009). The older USB1 stick
    /// (0fcf:1004) is a serial bridge (CP210x) and is not driven through libusb.
    public static let productIDs: Set<UInt16> = [0x1008, 0x1009]

    public static func matches(_ vendor: UInt16, _ product: UInt16) -> Bool { vendor == vendorID && productIDs.contains(product) }

    /// `ANT USBStick2`, `ANT USB-m`.
    public static func name(_ product: UInt16) -> String {
        switch product {
        case 0x1008: "ANT USBStick2"
        case 0x1009: "ANT USB-m"
        default: "ANT stick"
        }
    }
}

/// One ANT stick at work: the I/O edge of ``ANTStickController``. Opens the stick through
/// libusb, reads its byte stream with a frame decoder, feeds the controller every message and a
/// tick every 100 ms, writes what the controller sends, and hands out what happens. A stick that
/// stops answering is reset on the bus and opened again (twice in a row at most; one that ran in
/// between starts the count again); a stick that is unplugged ends the run.
public struct ANTStick: Sendable {
    public enum Event: Sendable {
        case opened(USBDeviceInfo, detachedDriver: String?)
        case identified(ANTStickController.StickInfo)
        case running(channels: [UInt8: ANTStickController.ChannelPlan], extendedMessages: Bool)
        /// A data message and when its bytes arrived.
        case data(ANTReply, receivedAt: Date)
        case channelEvent(channel: UInt8, code: ANTResponseCode)
        case problem(String)
        /// Bytes the frame decoder could not use (a bad checksum ...): counted.
        case dropped(ANTFrameDrop)
        /// The stick stopped answering: it is reset and opened again.
        case resetting(String)
    }

    /// Why a stick's run ended.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// True when the stick is gone (unplugged): a driver waits for it to come back.
        public var isGone: Bool
    }

    public let context: USBContext
    public let configuration: ANTStickController.Configuration
    /// Bus resets in a row after which an unresponsive stick fails the run.
    public var maximumResets = 2

    public init(context: USBContext, configuration: ANTStickController.Configuration) {
        self.context = context
        self.configuration = configuration
    }

    /// What a caller asks of a running stick (ANT-FS sends data and retunes its channel).
    public enum Command: Sendable {
        /// Channel configuration commands, each checked against its response.
        case configure([ANTMessage])
        /// Messages written as they are (acknowledged data, burst packets): their outcome comes
        /// back as channel events (transfer completed or failed).
        case send([ANTMessage])
    }

    private enum Input: Sendable {
        case usb(USBBulkDevice.Input, Date)
        case tick
        case command(Command)
    }

    /// Runs the stick at `info` until cancelled (returns) or it fails or goes (throws ``Failure``).
    /// `commands` (optional) are carried out while the stick runs.
    public func run(_ info: USBDeviceInfo, commands: AsyncStream<Command>? = nil,
                    onEvent: @Sendable (Event) async -> Void) async throws(Failure) {
        var info = info
        var resets = 0
        while !Task.isCancelled {
            let reason: String
            let ran: Bool
            do {
                (reason, ran) = try await session(info, commands: commands, onEvent: onEvent)
            } catch let error as Failure {
                throw error
            } catch {
                return  // cancelled
            }
            if Task.isCancelled { return }
            // Resets in a row: a stick that ran (its channels open) before it stopped answering
            // starts the count again, so that one hanging now and then in a long run is always reset.
            resets = ran ? 1 : resets + 1
            guard resets <= maximumResets else {
                let again = maximumResets == 0 ? "" : ", and again after \(maximumResets) bus reset(s)"
                throw Failure(description: "\(info): \(reason)\(again)", isGone: false)
            }
            await onEvent(.resetting(reason))
            // The stick re-enumerates after a bus reset, perhaps under another address: find it
            // again by its port.
            info = await refind(info) ?? info
        }
    }

    /// One open of the stick: returns why it must be reset (unresponsive) and whether it ran
    /// (its channels were opened) before; throws when it fails.
    private func session(_ info: USBDeviceInfo, commands: AsyncStream<Command>?, onEvent: @Sendable (Event) async -> Void)
        async throws -> (reason: String, ran: Bool)
    {
        var ran = false
        let (inputs, input) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let device: USBBulkDevice
        do {
            device = try await Self.offPool { () throws(USBError) in
                try USBBulkDevice(context: context, info: info) { usb in input.yield(.usb(usb, Date())) }
            }
        } catch {
            throw Failure(description: "\(info): \(error)", isGone: error.isGone)
        }
        await onEvent(.opened(info, detachedDriver: device.detachedDriver))
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                input.yield(.tick)
            }
        }
        let forwarder = commands.map { commands in
            Task {
                for await command in commands { input.yield(.command(command)) }
            }
        }
        defer {
            ticker.cancel()
            forwarder?.cancel()
        }
        var controller = ANTStickController(configuration: configuration)
        var decoder = ANTFrameDecoder()
        let start = ContinuousClock.now
        func now() -> Double { (ContinuousClock.now - start).inSeconds }
        /// Carries out the controller's actions; non-nil when the session must end.
        func perform(_ actions: [ANTStickController.Action], time: Date) async -> Result<String, Failure>? {
            for action in actions {
                switch action {
                case .send(let message):
                    do { try await device.write(message.encoded) } catch {
                        // A write that times out: the stick needs a reset.
                        return error.isGone ? .failure(Failure(description: "\(info): \(error)", isGone: true)) : .success("\(error)")
                    }
                case .identified(let stick): await onEvent(.identified(stick))
                case .running(let channels, let extended):
                    ran = true
                    await onEvent(.running(channels: channels, extendedMessages: extended))
                case .data(let reply): await onEvent(.data(reply, receivedAt: time))
                case .channelEvent(let channel, let code): await onEvent(.channelEvent(channel: channel, code: code))
                case .problem(let message): await onEvent(.problem(message))
                case .unresponsive(let reason): return .success(reason)
                case .failed(let reason): return .failure(Failure(description: "\(info): \(reason)", isGone: false))
                }
            }
            return nil
        }

        var outcome = await perform(controller.start(now: now()), time: Date())
        if outcome == nil {
            loop: for await item in inputs {
                if Task.isCancelled { break }
                switch item {
                case .tick:
                    outcome = await perform(controller.tick(now: now()), time: Date())
                case .usb(.bytes(let bytes), let time):
                    for output in decoder.feed(bytes) {
                        switch output {
                        case .message(let message):
                            do {
                                let reply = try ANTReply(message)
                                outcome = await perform(controller.received(reply, now: now()), time: time)
                            } catch {
                                await onEvent(.problem("\(error)"))
                            }
                        case .dropped(let drop):
                            await onEvent(.dropped(drop))
                        }
                        if outcome != nil { break }
                    }
                case .command(.configure(let messages)):
                    outcome = await perform(controller.configure(messages, now: now()), time: Date())
                case .command(.send(let messages)):
                    outcome = await perform(messages.map { .send($0) }, time: Date())
                case .usb(.stallCleared, _):
                    await onEvent(.problem("the stick's IN endpoint stalled; its halt was cleared"))
                case .usb(.failed(let error), _):
                    outcome = error.isGone
                        ? .failure(Failure(description: "\(info): \(error)", isGone: true)) : .success("\(error)")
                }
                if outcome != nil { break loop }
            }
        }
        input.finish()
        if let outcome, case .success(let reason) = outcome {
            // An I/O error is often the first sign of a stick being unplugged: one that is gone
            // half a second later is not reset (a reset of a device on its way out can hang).
            try? await Task.sleep(for: .milliseconds(500))
            let present = (try? await Self.offPool { () throws(USBError) in
                try context.devices(matching: ANTStickModel.matches).contains { $0.bus == info.bus && $0.address == info.address }
            }) ?? false
            guard present else {
                await device.shutdown()
                throw Failure(description: "\(info): \(reason)", isGone: true)
            }
            try? await device.resetDevice()
        }
        await device.shutdown()
        switch outcome {
        case .failure(let failure): throw failure
        case .success(let reason): return (reason, ran)
        case nil: throw CancellationError()
        }
    }

    /// The stick that is now in `info`'s port (it may have a new address after a reset).
    private func refind(_ info: USBDeviceInfo) async -> USBDeviceInfo? {
        for _ in 0..<20 {
            if let found = try? context.devices(matching: ANTStickModel.matches).first(where: { $0.sysfsName == info.sysfsName }) {
                return found
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return nil
    }

    /// Runs blocking libusb work on a thread of its own, never on Swift's cooperative pool.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws(USBError) -> T) async throws(USBError) -> T {
        try await OffPool.runOnNewThread(work)
    }
}
