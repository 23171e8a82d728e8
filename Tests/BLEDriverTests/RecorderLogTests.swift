import BluetoothCentral
import BLEHost
import DriverKit
import Logging
import Synchronization
import Testing
@testable import BLEDriver

/// What the daemon's `ble` driver writes to its log (the journal, with priorities).
struct RecorderLogTests {
    /// Keeps (level, message) of every line.
    final class Lines: Sendable {
        let kept = Mutex<[(Logger.Level, String)]>([])

        var logger: Logger { Logger(label: "test") { _ in Handler(sink: self) } }

        struct Handler: LogHandler {
            let sink: Lines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                sink.kept.withLock { $0.append((event.level, event.message.description)) }
            }
        }
    }

    /// bluetoothd or the adapter lost is a warning (every link through it ends); its return is
    /// info. Both reach the daemon's status: the driver waits, then works again.
    @Test func backendLossIsAWarningAndItsReturnInfo() throws {
        let lines = Lines()
        let events = Mutex<[DriverEvent]>([])
        let settings = try ConfigDecoder.decode(BLERecorder.Settings.self, from: ["hci": .string("bluez")])
        let context = DriverContext(instance: "strap", logger: lines.logger) { event in events.withLock { $0.append(event) } }
        let recorder = BLERecorder(settings: settings, context: context)
        let onEvent = try #require(recorder.configuration.onEvent)
        onEvent(.backend(message: "bluetoothd left the bus: 1 link(s) end; waiting for it to come back", trouble: true))
        onEvent(.backend(message: "bluetoothd is back on the bus", trouble: false))
        let kept = lines.kept.withLock { $0 }
        #expect(kept.map { $0.0 } == [.warning, .info])
        #expect(kept.map { $0.1 } == ["bluetoothd left the bus: 1 link(s) end; waiting for it to come back", "bluetoothd is back on the bus"])
        #expect(events.withLock { $0 } == [.waiting(reason: "bluetoothd left the bus: 1 link(s) end; waiting for it to come back"),
                                          .waiting(reason: nil)])
    }

    /// The other events in the words `healthgate record` prints, not Swift's description of the
    /// enum (the journal showed `retrying(address: ..., reason: Optional("..."))`).
    @Test func eventsAreLoggedInTheWordsRecordPrints() throws {
        let lines = Lines()
        let settings = try ConfigDecoder.decode(BLERecorder.Settings.self, from: ["hci": .string("bluez")])
        let recorder = BLERecorder(settings: settings, context: DriverContext(instance: "strap", logger: lines.logger))
        let onEvent = try #require(recorder.configuration.onEvent)
        let address = try #require(DeviceAddress("C0:4E:47:00:00:01", kind: .random))
        onEvent(.retrying(address: address, after: .seconds(2), reason: "bluetoothd is not running"))
        onEvent(.retrying(address: address, after: .milliseconds(1500), reason: nil))
        onEvent(.connected(address: address, connection: 2))
        var totals = BLERecorderStatistics()
        totals.values = 12
        totals.batches = 3
        onEvent(.finished(totals))
        let kept = lines.kept.withLock { $0 }.map(\.1)
        #expect(kept.count == 4)
        #expect(kept.prefix(3) == ["C0:4E:47:00:00:01: bluetoothd is not running", "C0:4E:47:00:00:01: reconnecting in 1.5 s",
                                   "C0:4E:47:00:00:01: reconnected (connection 2)"])
        #expect(kept.last?.hasPrefix("recording ended: 12 values from 0 device(s)") == true, "\(kept)")
        #expect(!kept.contains { $0.contains("Optional(") || $0.contains("BLERecorderStatistics") })
    }
}
