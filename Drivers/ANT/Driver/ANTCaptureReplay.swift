public import ANTPlusProfiles
import ANTProtocol
public import Foundation
public import HealthModel
public import PacketCapture
import USBKit

/// What a live recording would have made of an ANT stick's traffic captured by Linux usbmon
/// (pcap or pcapng, link type 220 or 189: Wireshark, tcpdump, `cat /sys/kernel/debug/usb/usbmon`
/// turned into pcap): `healthgate ant replay`. Pure: the capture's bytes in, readings and records
/// out, with the times the capture gives, so replaying the same capture again gives the same
/// records (their ids derive from sensor and time).
///
/// Per stick (bus and device number) the bytes the stick sent (completed bulk IN transfers) go
/// through the frame decoder and the same loop as a live recording (decoders per sensor, value
/// mapping, sessionizer); the bytes the host sent (bulk OUT submissions) tell which sensor kind
/// each channel was opened for, for messages that carry no channel id. Other devices' and other
/// transfer types' records are counted and skipped.
public enum ANTCaptureReplay {
    public struct Reading: Sendable {
        public var time: Date
        public var sensor: ANTSensorID
        public var readings: [ANTPlusReading]
        public var rssi: Int8?
    }

    public struct Statistics: Equatable, Sendable {
        public var records = 0
        /// Records that are not usbmon records of a bulk transfer with data (other link types,
        /// control transfers, submissions of IN transfers ...).
        public var skipped = 0
        public var bytesFromSticks = 0
        public var messages = 0
        public var droppedFrames = 0
        public var malformedPages = 0
        public var sticks: [String] = []
    }

    public struct Result: Sendable {
        public var readings: [Reading]
        /// What a recording stores: measurements and completed workouts.
        public var batch: LiveBatch
        public var statistics: Statistics
        /// Decode problems, the first 20.
        public var problems: [String]
        /// Where the capture is damaged (the records before it are replayed).
        public var damage: CaptureError?
        public var first: Date?
        public var last: Date?
    }

    public struct Configuration: Sendable {
        public var sessions = LiveSessionizer.Configuration(driver: "ant")
        public var wheelCircumference = 2.096

        public init() {}
    }

    /// Replays `bytes` (a capture file). Throws when it is not a pcap or pcapng file at all.
    public static func replay(_ bytes: [UInt8], configuration: Configuration = Configuration()) throws(CaptureError) -> Result {
        var reader = try CaptureReader(bytes)
        var recorder = ANTRecorder.Configuration(stick: ANTStickController.Configuration())
        recorder.sessions = configuration.sessions
        recorder.wheelCircumference = configuration.wheelCircumference
        var loop = ANTRecorder.Loop(configuration: recorder)
        var result = Result(readings: [], batch: LiveBatch(), statistics: Statistics(), problems: [])
        var fromStick: [USBDeviceInfo: ANTFrameDecoder] = [:]
        var fromHost: [USBDeviceInfo: ANTFrameDecoder] = [:]
        var plans: [USBDeviceInfo: [UInt8: ANTStickController.ChannelPlan]] = [:]
        var pieces: [LiveBatch] = []
        var flushed = Date.distantPast
        func problem(_ text: String) { if result.problems.count < 20 { result.problems.append(text) } }

        while true {
            let record: CaptureRecord
            do {
                guard let next = try reader.next() else { break }
                record = next
            } catch {
                result.damage = error
                break
            }
            result.statistics.records += 1
            guard record.link == .usbLinuxMMapped || record.link == .usbLinux, let packet = try? USBMonPacket(record),
                  packet.transferType == .bulk, !packet.data.isEmpty, packet.status == 0 || packet.event == .submit
            else {
                result.statistics.skipped += 1
                continue
            }
            let time = Date(timeIntervalSince1970: Double(record.timestampNanoseconds) / 1e9)
            result.first = result.first ?? time
            result.last = time
            let stick = USBDeviceInfo(bus: UInt8(truncatingIfNeeded: packet.bus), address: packet.device, ports: [],
                                      vendorID: ANTStickModel.vendorID, productID: 0)
            let name = String(format: "%03d:%03d", stick.bus, stick.address)
            if !result.statistics.sticks.contains(name) { result.statistics.sticks.append(name) }
            if packet.isIn, packet.event == .complete {
                result.statistics.bytesFromSticks += packet.data.count
                for output in fromStick[stick, default: ANTFrameDecoder()].feed(packet.data) {
                    switch output {
                    case .dropped(let drop):
                        result.statistics.droppedFrames += 1
                        problem("\(name): \(drop)")
                    case .message(let message):
                        result.statistics.messages += 1
                        guard let reply = try? ANTReply(message) else { continue }
                        for event in loop.handle(.data(reply, receivedAt: time), from: stick) {
                            switch event {
                            case .readings(let sensor, let readings, let at, let rssi):
                                result.readings.append(Reading(time: at, sensor: sensor, readings: readings, rssi: rssi))
                            case .problem(let kind, let message):
                                if kind == "ant_malformed" { result.statistics.malformedPages += 1 }
                                problem(message)
                            default: break
                            }
                        }
                    }
                }
            } else if !packet.isIn, packet.event == .submit {
                // The host's channel configuration: which kind each channel listens for.
                for case .message(let message) in fromHost[stick, default: ANTFrameDecoder()].feed(packet.data)
                where message.id == ANTMessageID.channelID && message.payload.count >= 5 {
                    guard let id = ANTChannelID(bytes: message.payload, at: 1),
                          let parameters = ANTPlusChannelParameters.forDeviceType(id.deviceType) else { continue }
                    plans[stick, default: [:]][message.payload[0]] = ANTStickController.ChannelPlan(
                        parameters, deviceNumber: id.extendedDeviceNumber)
                    _ = loop.handle(.running(channels: plans[stick] ?? [:], extendedMessages: false), from: stick)
                }
            } else {
                result.statistics.skipped += 1
            }
            // Pieces of workouts as a recording stores them, once per second of the capture.
            if time.timeIntervalSince(flushed) >= 1 {
                flushed = time
                pieces.append(loop.take(loop.sessions.flush(now: time)))
            }
        }
        pieces.append(loop.take(loop.sessions.finish()))
        result.batch = LiveBatch(records: pieces.flatMap(\.records), workouts: pieces.flatMap(\.workouts))
        return result
    }
}
