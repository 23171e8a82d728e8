import Foundation
import Testing
import TestSupport
import BluetoothCentral
import BLEHost
import Timing
@testable import BLERuntime

/// A controller scripted in the test: answers every command (Command Complete with canned return
/// parameters, or Command Status for the commands that start something) unless told to stay
/// silent, and lets the test inject any event or ACL packet. Covers what the Bumble peer never
/// does: legacy advertising reports, shared buffers, a single ACL credit, connection parameter
/// update requests, a create connection that never completes.
final class ScriptedController: HCITransport, @unchecked Sendable {
    let name = "scripted"
    private var queue: DispatchQueue?
    private var receive: (@Sendable ([UInt8]?) -> Void)?
    private let lock = NSLock()
    private var _sent: [[UInt8]] = []
    private var _silent: Set<UInt16> = []
    var returns: [UInt16: [UInt8]] = [:]
    var reportCancelledConnections = false
    /// Refuse LE Create Connection with Command Disallowed (as a controller still initiating
    /// does) until an LE Create Connection Cancel arrives.
    var initiatingUntilCancelled = false
    /// Answer LE Create Connection with its Command Status and, right behind it, a successful
    /// LE Connection Complete (handle 0x0042) from this peer: the fastest a controller can be.
    var connectAtOnce: DeviceAddress?
    static let statusCommands: Set<UInt16> = [HCIOpcode.leCreateConnection.rawValue, HCIOpcode.disconnect.rawValue,
                                              HCIOpcode.leConnectionUpdate.rawValue]

    func start(on queue: DispatchQueue, _ receive: @escaping @Sendable ([UInt8]?) -> Void) {
        lock.withLock {
            self.queue = queue
            self.receive = receive
        }
    }

    var sent: [[UInt8]] { lock.withLock { _sent } }
    var sentOpcodes: [HCIOpcode] { sent.filter { $0.first == 0x01 }.map { HCIOpcode(rawValue: UInt16($0[1]) | UInt16($0[2]) << 8) } }
    var sentACL: [[UInt8]] { sent.filter { $0.first == 0x02 } }
    func silence(_ opcode: HCIOpcode) { lock.withLock { _ = _silent.insert(opcode.rawValue) } }

    func send(_ bytes: [UInt8]) throws(TransportError) {
        let silent: Bool = lock.withLock {
            _sent.append(bytes)
            return bytes.first == 0x01 && _silent.contains(UInt16(bytes[1]) | UInt16(bytes[2]) << 8)
        }
        guard bytes.first == 0x01, !silent else { return }
        let op = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
        if op == HCIOpcode.leCreateConnectionCancel.rawValue { lock.withLock { initiatingUntilCancelled = false } }
        let disallowed = op == HCIOpcode.leCreateConnection.rawValue && lock.withLock { initiatingUntilCancelled }
        if Self.statusCommands.contains(op) {
            inject([0x04, 0x0F, 4, disallowed ? 0x0C : 0x00, 1, bytes[1], bytes[2]])
        } else {
            let params: [UInt8] = [1, bytes[1], bytes[2]] + (returns[op] ?? [0x00])
            inject([0x04, 0x0E, UInt8(params.count)] + params)
        }
        if op == HCIOpcode.leCreateConnection.rawValue, let peer = connectAtOnce {
            inject(Self.connectionComplete(handle: 0x0042, peer: peer))
        }
        if op == HCIOpcode.leCreateConnectionCancel.rawValue && reportCancelledConnections {
            // What real controllers do: the cancelled attempt ends with Unknown Connection Identifier.
            inject(Self.connectionComplete(handle: 0, peer: DeviceAddress(0), status: 0x02))
        }
    }

    /// Delivered in order on the runtime's queue, like a real transport.
    func inject(_ bytes: [UInt8]?) {
        let (queue, receive) = lock.withLock { (self.queue, self.receive) }
        queue?.async { receive?(bytes) }
    }
    func close() { inject(nil) }

    static func connectionComplete(handle: UInt16, peer: DeviceAddress, status: UInt8 = 0) -> [UInt8] {
        [0x04, 0x3E, 19, 0x01, status, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x00, 0x01] + peer.littleEndianBytes
            + [0x18, 0x00, 0x00, 0x00, 0x90, 0x01, 0x00]
    }
}

@Suite struct ScriptedControllerTests {
    let peer = DeviceAddress(0xC1_22_33_44_55_66, kind: .random)

    func makeHost(_ controller: ScriptedController, commandTimeout: Duration = .milliseconds(300)) -> HostRuntime {
        controller.returns[HCIOpcode.readBDAddr.rawValue] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06]
        controller.returns[HCIOpcode.readLocalVersion.rawValue] = [0x00, 0x0C, 0x00, 0x00, 0x0C, 0x5F, 0x00, 0x00, 0x00]
        // LE buffers shared with BR/EDR: LE Read Buffer Size says 0, Read Buffer Size says 100 x 1.
        controller.returns[HCIOpcode.leReadBufferSize.rawValue] = [0x00, 0x00, 0x00, 0x00]
        controller.returns[HCIOpcode.readBufferSize.rawValue] = [0x00, 100, 0x00, 0x40, 0x01, 0x00, 0x00, 0x00]
        var configuration = HostRuntime.Configuration()
        configuration.commandTimeout = commandTimeout
        return HostRuntime(transport: controller, configuration: configuration)
    }

    @Test func initSequenceFallsBackToSharedBuffers() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller)
        let info = try await withTimeout { try await host.start() }
        #expect(controller.sentOpcodes == [.reset, .readBDAddr, .readLocalVersion, .leReadBufferSize, .readBufferSize,
                                           .setEventMask, .leSetEventMask, .leSetRandomAddress])
        #expect(info.address.text == "06:05:04:03:02:01")
        #expect(info.version?.hciVersion == 0x0C)
        #expect(info.aclDataLength == 100 && info.aclPackets == 1)
        #expect(info.randomAddress.randomKind == .static)
        // LE Set Random Address carries the address the host reports.
        let setRandom = try #require(controller.sent.last { $0.count == 10 && $0[1] == 0x05 && $0[2] == 0x20 })
        #expect(Array(setRandom[4...]) == info.randomAddress.littleEndianBytes)
        await host.close()
    }

    @Test func unansweredCommandTimesOutAndTheNextOneWorks() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller)
        try await withTimeout {
            try await host.start()
            controller.silence(.leSetEventMask)
            await #expect(throws: BLEError.commandTimedOut(.leSetEventMask)) {
                _ = try await host.complete(.leSetEventMask(0))
            }
            _ = try await host.complete(.setEventMask(0))
            #expect(await host.statistics.commandTimeouts == 1)
        }
        await host.close()
    }

    @Test func legacyReportsAreMergedAndDeduplicated() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            // Long enough that a loaded machine never ends the scan before the reports are read.
            let devices = Collector(try await host.scan(duration: .seconds(120)))
            let adv: [UInt8] = [0x02, 0x01, 0x06, 0x07, 0x09] + Array("Legacy".utf8)
            let report: (UInt8, [UInt8], DeviceAddress) -> [UInt8] = { type, data, address in
                let body: [UInt8] = [0x02, 1, type, 0x01] + address.littleEndianBytes + [UInt8(data.count)] + data + [0xC4]
                return [0x04, 0x3E, UInt8(body.count)] + body
            }
            controller.inject(report(0x00, adv, peer))
            controller.inject(report(0x00, adv, peer))  // the same again: nothing new
            controller.inject(report(0x04, [0x03, 0x03, 0x0D, 0x18], peer))  // scan response adds a UUID
            let list = try await devices.wait("two yields") { $0.count >= 2 }
            #expect(list[0].name == "Legacy" && list[0].serviceUUIDs.isEmpty && !list[0].fromExtendedReport)
            #expect(list[0].rssi == -60 && list[0].isConnectable)
            #expect(list[1].serviceUUIDs == [BluetoothUUID(0x180D)] && list[1].name == "Legacy")
            // Reports are handled in order: once a later device is in, the duplicate has been
            // handled too, and it yielded nothing.
            let other = DeviceAddress(0xC1_22_33_44_55_77, kind: .random)
            controller.inject(report(0x00, adv, other))
            let all = try await devices.wait("the device reported last") { $0.count >= 3 }
            #expect(all.count == 3 && all[2].address == other)
        }
        await host.close()
    }

    @Test func connectionParameterUpdateAndACLCredits() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            async let connecting = host.connect(to: peer, timeout: .seconds(30))
            try await waitUntil { controller.sentOpcodes.contains(.leCreateConnection) }
            controller.inject(ScriptedController.connectionComplete(handle: 0x0040, peer: peer))
            let client = try await connecting
            #expect(client.handle == 0x0040 && client.peer == peer)
            // The bearer's MTU exchange uses the only ACL credit.
            try await waitUntil { controller.sentACL.count == 1 }
            #expect(controller.sentACL[0] == [0x02, 0x40, 0x00, 7, 0, 3, 0, 4, 0, 0x02, 0xF7, 0x00])

            // Connection Parameter Update Request (signaling channel 5, identifier 7).
            let signaling: [UInt8] = [0x12, 0x07, 8, 0, 24, 0, 40, 0, 0, 0, 0x90, 0x01]
            controller.inject([0x02, 0x40, 0x20, UInt8(signaling.count + 4), 0, UInt8(signaling.count), 0, 5, 0] + signaling)
            try await waitUntil { controller.sentOpcodes.contains(.leConnectionUpdate) }
            #expect(controller.sentACL.count == 1)  // the response waits for a credit
            controller.inject([0x04, 0x13, 5, 1, 0x40, 0x00, 1, 0])  // Number Of Completed Packets
            try await waitUntil { controller.sentACL.count == 2 }
            #expect(controller.sentACL[1] == [0x02, 0x40, 0x00, 10, 0, 6, 0, 5, 0, 0x13, 0x07, 2, 0, 0, 0])
            #expect(await host.statistics.connectionUpdatesAccepted == 1)

            // The peer drops the link: waiters get the reason, later calls fail with it.
            controller.inject([0x04, 0x05, 4, 0x00, 0x40, 0x00, 0x13])
            #expect(try await client.disconnected(timeout: .seconds(60)) == .remoteUserTerminated)
            await #expect(throws: BLEError.disconnected(.remoteUserTerminated)) { try await client.discover() }
        }
        await host.close()
    }

    @Test func connectTimeoutCancelsTheCreate() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            await #expect(throws: BLEError.connectTimedOut(peer)) {
                _ = try await host.connect(to: peer, timeout: .milliseconds(300))
            }
            try await waitUntil { controller.sentOpcodes.contains(.leCreateConnectionCancel) }
            // The controller reports the cancelled attempt; the next create may go.
            controller.inject(ScriptedController.connectionComplete(handle: 0, peer: peer, status: 0x02))
            async let second = host.connect(to: peer, timeout: .seconds(30))
            try await waitUntil { controller.sentOpcodes.filter { $0 == .leCreateConnection }.count == 2 }
            controller.inject(ScriptedController.connectionComplete(handle: 0x0041, peer: peer))
            #expect(try await second.handle == 0x0041)
        }
        await host.close()
    }

    /// A controller still initiating an attempt the host gave up refuses every new create with
    /// Command Disallowed: the host cancels that attempt, and the next create goes through.
    @Test func aControllerStillConnectingIsToldToCancel() async throws {
        let controller = ScriptedController()
        controller.initiatingUntilCancelled = true
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            await #expect(throws: BLEError.commandFailed(.leCreateConnection, .commandDisallowed)) {
                _ = try await host.connect(to: peer, timeout: .seconds(30))
            }
            try await waitUntil { controller.sentOpcodes.contains(.leCreateConnectionCancel) }
            async let second = host.connect(to: peer, timeout: .seconds(30))
            try await waitUntil { controller.sentOpcodes.filter { $0 == .leCreateConnection }.count == 2 }
            controller.inject(ScriptedController.connectionComplete(handle: 0x0041, peer: peer))
            #expect(try await second.handle == 0x0041)
        }
        await host.close()
    }

    /// The report of a cancelled attempt that comes late (LE Connection Complete, Unknown
    /// Connection Identifier, after the host freed the slot and started the next attempt) does not
    /// end the next attempt: it goes on and connects. It used to fail with that status.
    @Test func aLateCancelReportDoesNotEndTheNextAttempt() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller)
        let peer = self.peer, other = DeviceAddress(0xC1_22_33_44_55_77, kind: .random)
        try await withTimeout {
            try await host.start()
            await #expect(throws: BLEError.connectTimedOut(peer)) {
                _ = try await host.connect(to: peer, timeout: .milliseconds(200))
            }
            async let second = host.connect(to: other, timeout: .seconds(30))
            try await waitUntil { controller.sentOpcodes.filter { $0 == .leCreateConnection }.count == 2 }
            controller.inject(ScriptedController.connectionComplete(handle: 0, peer: peer, status: 0x02))
            controller.inject(ScriptedController.connectionComplete(handle: 0x0043, peer: other))
            #expect(try await second.handle == 0x0043)
        }
        await host.close()
    }

    /// The connection may complete before `connect` is back from sending the create command (the
    /// runtime handles the event in between): the caller still gets its link.
    @Test func aConnectionCompleteRightBehindTheCommandStatusIsNotLost() async throws {
        let controller = ScriptedController()
        controller.connectAtOnce = peer
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            for _ in 0..<20 {
                let client = try await host.connect(to: peer, timeout: .seconds(30))
                #expect(client.handle == 0x0042)
                controller.inject([0x04, 0x05, 4, 0x00, 0x42, 0x00, 0x13])  // and down again
                _ = try await client.disconnected(timeout: .seconds(60))
            }
        }
        await host.close()
    }

    /// Cancelling callers of `connect`: the one whose create is pending and the one waiting for
    /// its turn both end at once with `cancelled`, long before their timeouts.
    @Test func cancelledConnectsEndAtOnce() async throws {
        let controller = ScriptedController()
        controller.reportCancelledConnections = true
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            let first = Task { () -> BLEError? in
                do throws(BLEError) { _ = try await host.connect(to: peer, timeout: .seconds(60)); return nil } catch { return error }
            }
            try await waitUntil { controller.sentOpcodes.contains(.leCreateConnection) }
            let second = Task { () -> BLEError? in
                do throws(BLEError) { _ = try await host.connect(to: peer, timeout: .seconds(60)); return nil } catch { return error }
            }
            try await Task.sleep(for: .milliseconds(50))
            second.cancel()
            #expect(await second.value == .cancelled)
            first.cancel()
            #expect(await first.value == .cancelled)
            try await waitUntil { controller.sentOpcodes.contains(.leCreateConnectionCancel) }
        }
        await host.close()
    }

    /// A wait on a live link (its end, with no timeout) ends with `cancelled` when its task is
    /// cancelled, and the link stays up for the other callers.
    @Test func aCancelledWaitOnALiveLinkEndsAtOnce() async throws {
        let controller = ScriptedController()
        controller.connectAtOnce = peer
        let host = makeHost(controller)
        let peer = self.peer
        try await withTimeout {
            try await host.start()
            let client = try await host.connect(to: peer, timeout: .seconds(30))
            let waiting = Task { () -> BLEError? in
                do throws(BLEError) { _ = try await client.disconnected(timeout: nil); return nil } catch { return error }
            }
            try await Task.sleep(for: .milliseconds(50))
            waiting.cancel()
            #expect(await waiting.value == .cancelled)
            // Still up: the peer's end is reported to the next waiter.
            controller.inject([0x04, 0x05, 4, 0x00, 0x42, 0x00, 0x13])
            #expect(try await client.disconnected(timeout: .seconds(60)) == .remoteUserTerminated)
        }
        await host.close()
    }

    /// The session's retry loop with an injected sleeper: against a peripheral that never
    /// connects, every attempt times out and the delays follow the backoff schedule.
    @Test func sessionBacksOffWithTheInjectedSleeper() async throws {
        let controller = ScriptedController()
        controller.reportCancelledConnections = true
        let host = makeHost(controller)
        try await withTimeout {
            try await host.start()
            let slept = Collector<Duration>.Sink()
            var configuration = DeviceSession.Configuration(address: self.peer, subscriptions: [BluetoothUUID(0x2A37)])
            configuration.connectTimeout = .milliseconds(50)
            configuration.backoff = Backoff(initial: .milliseconds(100), multiplier: 2, maximum: .milliseconds(400), jitter: 0.5)
            let session = DeviceSession(runtime: host, configuration: configuration,
                                        sleep: { slept.append($0) }, random: { 1.0 })
            let events = Collector(session.events)
            await session.start()
            try await events.wait("five failed attempts") { $0.filter { if case .attemptFailed = $0 { true } else { false } }.count >= 5 }
            await session.stop()
            #expect(Array(slept.values.prefix(4)) == [.milliseconds(150), .milliseconds(300), .milliseconds(600), .milliseconds(600)])
            #expect(events.values.contains(.attemptFailed(BLEError.connectTimedOut(self.peer).description)))
            #expect(controller.sentOpcodes.filter { $0 == .leCreateConnectionCancel }.count >= 5)
        }
        await host.close()
    }

    @Test func closedTransportFailsWaitersWithClosed() async throws {
        let controller = ScriptedController()
        let host = makeHost(controller, commandTimeout: .seconds(30))
        try await withTimeout {
            try await host.start()
            controller.silence(.readLocalVersion)
            let pending = Task { () -> BLEError? in
                do throws(BLEError) { _ = try await host.complete(.readLocalVersion); return nil } catch { return error }
            }
            try await waitUntil { controller.sentOpcodes.filter { $0 == .readLocalVersion }.count == 2 }
            controller.close()
            #expect(await pending.value == .closed)
            await #expect(throws: BLEError.closed) { _ = try await host.complete(.reset) }
        }
        await host.close()
    }
}

/// Polls `condition` every 5 ms until it holds (at most ``Patience/limit``).
func waitUntil(_ what: String = "condition", _ condition: @Sendable () async -> Bool) async throws {
    try await eventually(what, every: .milliseconds(5)) { await condition() }
}
