public import BluetoothCentral
public import Foundation
public import GATTProfiles
public import HealthModel
import Synchronization
import Timing
public import DriverKit

/// Downloads a glucose meter's stored records through its Record Access Control Point: the I/O
/// edge of `GlucoseRecordDownload` (which decides every step). Subscribes to Glucose Measurement,
/// Context and the control point, writes the requests, feeds what arrives, and ends the download
/// when the meter has been silent for `silence` between two things it sent, or has not begun
/// to answer a request within `firstAnswer` (a meter may take seconds to look its records up,
/// and a busy host to hear it).
public enum GlucoseDownloader {
    public struct Result: Sendable {
        /// The whole records, in sequence order.
        public var records: [GlucoseRecordDownload.Record]
        public var outcome: GlucoseRecordDownload.Outcome
        /// How many records the meter said it holds for the request (nil if it does not count).
        public var expected: Int?
        /// The meter was reset: every record it holds was asked for
        /// (``GlucoseRecordDownload/meterWasReset``).
        public var meterWasReset: Bool
        /// How the reset showed: the stored record came back changed (else the meter held neither
        /// it nor any after it).
        public var storedRecordDiffers: Bool
        /// The measurements to store: one per record with a concentration, the same identities
        /// as live glucose notifications (device, kind, time, sequence number).
        public var batch: LiveBatch
    }

    /// Downloads the records after `cursor` (all of them when nil; from its record on, checked,
    /// when it holds the record) over a connected and discovered link. `progress` gets (whole
    /// records so far, the meter's count).
    public static func download(_ connection: any BLEConnection, database: GATTDatabase, after cursor: GlucoseCursor?,
                                silence: Duration = .seconds(10), firstAnswer: Duration = .seconds(30), timeZone: TimeZone = .current,
                                progress: @escaping @Sendable (Int, Int?) -> Void = { _, _ in }) async throws(BLEError) -> Result {
        let racp = BluetoothUUID(GATTCharacteristic.recordAccessControlPoint)
        let measurement = BluetoothUUID(GATTCharacteristic.glucoseMeasurement)
        let context = BluetoothUUID(GATTCharacteristic.glucoseMeasurementContext)
        guard !database.characteristics(racp).isEmpty else { throw .characteristicNotFound(racp) }
        guard !database.characteristics(measurement).isEmpty else { throw .characteristicNotFound(measurement) }
        let (stream, continuation) = AsyncStream.makeStream(of: GATTNotification.self, bufferingPolicy: .unbounded)
        try await connection.subscribe(measurement, into: continuation, timeout: .seconds(10))
        if !database.characteristics(context).isEmpty {
            try await connection.subscribe(context, into: continuation, timeout: .seconds(10))
        }
        try await connection.subscribe(racp, into: continuation, timeout: .seconds(10))

        // Two children end the stream: the watchdog, when nothing arrived for `silence` since the
        // meter last sent something, or for `firstAnswer` since a request it has not begun to
        // answer (it waits for that moment, woken when the meter sends something); and the
        // link's end.
        let lastActivity = Activity()
        let longestSilence = max(silence, firstAnswer)
        var download = GlucoseRecordDownload(after: cursor)
        let ended: Swift.Result<GlucoseRecordDownload.Step, BLEError> = await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    let last = lastActivity.state.withLock { $0 }
                    let left = last.time + (last.answered ? silence : longestSilence) - ContinuousClock.now
                    if left <= .zero { break }
                    // Woken early by new activity: the deadline moved (sooner once the meter answers).
                    _ = await lastActivity.changed.wait(upTo: left)
                }
                continuation.finish()
            }
            group.addTask {
                _ = try? await connection.disconnected(timeout: nil)
                continuation.finish()
            }
            defer {
                group.cancelAll()
                continuation.finish()
            }
            var step = GlucoseRecordDownload.Step.write(download.start())
            var iterator = stream.makeAsyncIterator()
            var received = 0
            loop: while true {
                switch step {
                case .finished:
                    break loop
                case .write(let bytes):
                    lastActivity.note(answered: false)
                    do throws(BLEError) { try await connection.write(racp, bytes, timeout: .seconds(10)) } catch { return .failure(error) }
                    step = .wait
                    continue
                case .wait:
                    break
                }
                guard let n = await iterator.next() else {
                    step = download.meterSilent()
                    continue
                }
                lastActivity.note(answered: true)
                switch n.characteristic {
                case racp:
                    if let response = try? RecordAccessControlPoint.decodeResponse(n.value) { step = download.controlPoint(response) }
                    if download.expected != nil, received == 0 { progress(0, download.expected) }
                case measurement:
                    if let m = try? GlucoseMeasurement.decode(n.value) { step = download.measurement(m, value: n.value) }
                case context:
                    if let c = try? GlucoseMeasurementContext.decode(n.value) { step = download.context(c) }
                default:
                    break
                }
                if download.records.count != received {
                    received = download.records.count
                    progress(received, download.expected)
                }
            }
            return .success(step)
        }
        let step = try ended.get()
        guard case .finished(let outcome) = step else { preconditionFailure("the loop ends finished") }
        let records = download.records
        var sessionizer = GATTSessionizer(configuration: GATTSessionizer.Configuration(timeZone: timeZone))
        var batch = LiveBatch()
        let now = Date()
        for r in records {
            batch += sessionizer.receive(LiveReading(device: connection.peer.text, receivedAt: now, reading: .glucose(r.measurement)))
        }
        return Result(records: records, outcome: outcome, expected: download.expected, meterWasReset: download.meterWasReset,
                      storedRecordDiffers: download.storedRecordDiffers, batch: batch)
    }
}

/// The `ble` driver's checkpoint for a glucose meter: where its stored records end. The driver
/// and `healthgate ble download` keep it across runs through their sink (or the store), stored
/// with the records it covers.
extension GlucoseCursor: DriverCheckpoint {
    public static let driver = "ble"
}

/// When the meter last sent something, and whether it has begun to answer the request.
private final class Activity: Sendable {
    let state = Mutex((time: ContinuousClock.now, answered: false))
    /// Rung at each note, for the watchdog waiting for the deadline.
    let changed = Doorbell()

    func note(answered: Bool) {
        state.withLock { $0 = (.now, answered) }
        changed.ring()
    }
}
