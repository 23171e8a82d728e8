import HealthModel
import Testing
@testable import GATTProfiles

/// The RACP download state machine: requests for all records and for records since a sequence
/// number, a complete transfer, whole records only, a meter that stops, refuses or has nothing.
@Suite struct GlucoseRecordDownloadTests {
    typealias RACP = RecordAccessControlPoint

    /// A measurement with a concentration (kg/L), 2026-11-24 HH:MM:00 (10 h unless given); the
    /// context flag when asked.
    func measurement(_ seq: UInt16, context: Bool = false, hour: UInt8 = 10) throws -> GlucoseMeasurement {
        try GlucoseMeasurement.decode(value(seq, context: context, hour: hour))
    }

    /// Its bytes, as the meter sends them.
    func value(_ seq: UInt16, context: Bool = false, hour: UInt8 = 10) -> [UInt8] {
        let flags: UInt8 = 0x02 | (context ? 0x10 : 0)
        return [flags, UInt8(seq & 0xFF), UInt8(seq >> 8), 0xEA, 0x07, 11, 24, hour, UInt8(seq % 60), 0, 0x5A, 0xB0, 0x11]
    }

    /// Record `seq` as the meter sent it (10 h unless given), decoded and as bytes.
    @discardableResult
    func receive(_ d: inout GlucoseRecordDownload, _ seq: UInt16, hour: UInt8 = 10) throws -> GlucoseRecordDownload.Step {
        d.measurement(try measurement(seq, hour: hour), value: value(seq, hour: hour))
    }

    func context(_ seq: UInt16) throws -> GlucoseMeasurementContext {
        try GlucoseMeasurementContext.decode([0x00, UInt8(seq & 0xFF), UInt8(seq >> 8)])
    }

    static let recordsDone = RACP.Response.responseCode(request: RACP.OpCode.reportStoredRecords.rawValue, code: .success)

    @Test("the first download asks for every record: count, then report all")
    func allRecords() throws {
        var d = GlucoseRecordDownload(after: nil)
        #expect(d.start() == [0x04, 0x01])
        #expect(d.controlPoint(.numberOfStoredRecords(3)) == .write([0x01, 0x01]))
        #expect(d.expected == 3)
        for seq: UInt16 in [1, 2, 3] { d.measurement(try measurement(seq)) }
        #expect(d.progressText == "(3 of 3 records arrived)")
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [1, 2, 3])
        #expect(d.phase == .finished(.complete))
    }

    @Test("later downloads ask for sequence numbers >= the last stored + 1")
    func sinceLastSequence() throws {
        var d = GlucoseRecordDownload(after: .sequenceOnly(0x0102))
        #expect(d.firstSequence == 0x0103)
        #expect(d.start() == [0x04, 0x03, 0x01, 0x03, 0x01])
        #expect(d.controlPoint(.numberOfStoredRecords(1)) == .write([0x01, 0x03, 0x01, 0x03, 0x01]))
        d.measurement(try measurement(0x0103))
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [0x0103])
        // After 65535 comes 0: every record.
        var wrapped = GlucoseRecordDownload(after: .sequenceOnly(.max))
        #expect(wrapped.firstSequence == nil)
        #expect(wrapped.start() == [0x04, 0x01])
    }

    @Test("nothing new: a count of 0 after the last stored, and the meter still holds that one; 'no records found' too")
    func noRecords() {
        var d = GlucoseRecordDownload(after: .sequenceOnly(5))
        _ = d.start()
        #expect(d.controlPoint(.numberOfStoredRecords(0)) == .write(RACP.reportNumberOfRecords(fromSequenceNumber: 5)))
        #expect(d.phase == .checkingReset)
        #expect(d.controlPoint(.numberOfStoredRecords(1)) == .finished(.noRecords))
        #expect(!d.meterWasReset && d.expected == 0)
        var e = GlucoseRecordDownload(after: .sequenceOnly(5))
        _ = e.start()
        #expect(e.controlPoint(.numberOfStoredRecords(2)) == .write(RACP.reportRecords(fromSequenceNumber: 6)))
        #expect(e.controlPoint(.responseCode(request: 1, code: .noRecordsFound)) == .write(RACP.reportNumberOfRecords(fromSequenceNumber: 5)))
        #expect(e.controlPoint(.numberOfStoredRecords(3)) == .finished(.noRecords))
        #expect(e.records.isEmpty)
        // The first download has nothing to check: an empty meter is simply empty.
        var f = GlucoseRecordDownload(after: nil)
        _ = f.start()
        #expect(f.controlPoint(.numberOfStoredRecords(0)) == .finished(.noRecords))
    }

    @Test("a meter holding neither the last stored record nor any after it was reset: every record it holds is downloaded")
    func resetMeter() throws {
        var d = GlucoseRecordDownload(after: .sequenceOnly(6))
        #expect(d.start() == RACP.reportNumberOfRecords(fromSequenceNumber: 7))
        #expect(d.controlPoint(.numberOfStoredRecords(0)) == .write(RACP.reportNumberOfRecords(fromSequenceNumber: 6)))
        #expect(d.controlPoint(.numberOfStoredRecords(0)) == .write(RACP.reportNumberOfAllRecords()))
        #expect(d.meterWasReset && d.firstSequence == nil && d.phase == .counting)
        #expect(d.controlPoint(.numberOfStoredRecords(2)) == .write(RACP.reportAllRecords()))
        #expect(d.expected == 2)
        for seq: UInt16 in [1, 2] { d.measurement(try measurement(seq)) }
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [1, 2])
        // Reset and empty: nothing, and no second check.
        var e = GlucoseRecordDownload(after: .sequenceOnly(6))
        _ = e.start()
        _ = e.controlPoint(.numberOfStoredRecords(0))
        _ = e.controlPoint(.numberOfStoredRecords(0))
        #expect(e.controlPoint(.numberOfStoredRecords(0)) == .finished(.noRecords))
        #expect(e.meterWasReset)
    }

    @Test("the stored record known: asked for from it on; it comes back the same: the others are new")
    func storedRecordTheSame() throws {
        let stored = GlucoseCursor(sequence: 6, record: value(6))
        var d = GlucoseRecordDownload(after: stored)
        #expect(d.firstSequence == 6)
        #expect(d.start() == RACP.reportNumberOfRecords(fromSequenceNumber: 6))
        #expect(d.controlPoint(.numberOfStoredRecords(2)) == .write(RACP.reportRecords(fromSequenceNumber: 6)))
        try receive(&d, 6)
        try receive(&d, 7)
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(!d.meterWasReset && !d.storedRecordDiffers && d.records.map(\.sequenceNumber) == [6, 7])
        #expect(d.records.last?.value == value(7))
        // Nothing new: the stored record alone.
        var e = GlucoseRecordDownload(after: stored)
        _ = e.start()
        _ = e.controlPoint(.numberOfStoredRecords(1))
        try receive(&e, 6)
        #expect(e.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(!e.meterWasReset && e.records.map(\.sequenceNumber) == [6])
    }

    @Test("the stored record comes back changed (reset, then filled past it): the transfer ends, then every record")
    func storedRecordChanged() throws {
        var d = GlucoseRecordDownload(after: GlucoseCursor(sequence: 3, record: value(3)))
        _ = d.start()
        #expect(d.controlPoint(.numberOfStoredRecords(3)) == .write(RACP.reportRecords(fromSequenceNumber: 3)))
        for seq: UInt16 in [3, 4, 5] { try receive(&d, seq, hour: 12) }  // the new meter's 3, 4, 5
        #expect(d.storedRecordDiffers && !d.meterWasReset)
        #expect(d.controlPoint(Self.recordsDone) == .write(RACP.reportNumberOfAllRecords()))
        #expect(d.meterWasReset && d.firstSequence == nil)
        #expect(d.controlPoint(.numberOfStoredRecords(5)) == .write(RACP.reportAllRecords()))
        for seq: UInt16 in 1...5 { try receive(&d, seq, hour: 12) }
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [1, 2, 3, 4, 5])
        // Still draining when the meter says it is done: every record once the count is reached.
        var e = GlucoseRecordDownload(after: GlucoseCursor(sequence: 3, record: value(3)))
        _ = e.start()
        _ = e.controlPoint(.numberOfStoredRecords(2))
        try receive(&e, 3, hour: 12)
        #expect(e.controlPoint(Self.recordsDone) == .wait)
        #expect(try receive(&e, 4, hour: 12) == .write(RACP.reportNumberOfAllRecords()))
        // A meter that cannot count: "no records found" from the stored one on is a reset at once.
        let cannotCount = RACP.Response.responseCode(request: RACP.OpCode.reportNumberOfStoredRecords.rawValue, code: .opCodeNotSupported)
        var f = GlucoseRecordDownload(after: GlucoseCursor(sequence: 3, record: value(3)))
        _ = f.start()
        #expect(f.controlPoint(cannotCount) == .write(RACP.reportRecords(fromSequenceNumber: 3)))
        let none = RACP.Response.responseCode(request: RACP.OpCode.reportStoredRecords.rawValue, code: .noRecordsFound)
        #expect(f.controlPoint(none) == .write(RACP.reportAllRecords()))
        #expect(f.meterWasReset && !f.storedRecordDiffers)
        // One that counts none from the stored one on: the same, without a second question.
        var g = GlucoseRecordDownload(after: GlucoseCursor(sequence: 3, record: value(3)))
        _ = g.start()
        #expect(g.controlPoint(.numberOfStoredRecords(0)) == .write(RACP.reportNumberOfAllRecords()))
        #expect(g.meterWasReset)
    }

    @Test("a meter that cannot count is asked for the last stored record itself: sent again it is kept once; 'no records found' means reset")
    func resetMeterThatCannotCount() throws {
        let cannotCount = RACP.Response.responseCode(request: RACP.OpCode.reportNumberOfStoredRecords.rawValue, code: .opCodeNotSupported)
        let noRecords = RACP.Response.responseCode(request: RACP.OpCode.reportStoredRecords.rawValue, code: .noRecordsFound)
        var d = GlucoseRecordDownload(after: .sequenceOnly(6))
        _ = d.start()
        #expect(d.controlPoint(cannotCount) == .write(RACP.reportRecords(fromSequenceNumber: 7)))
        #expect(d.controlPoint(noRecords) == .write(RACP.reportRecords(fromSequenceNumber: 6)))
        d.measurement(try measurement(6))
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(!d.meterWasReset && d.records.map(\.sequenceNumber) == [6])
        var e = GlucoseRecordDownload(after: .sequenceOnly(6))
        _ = e.start()
        _ = e.controlPoint(cannotCount)
        _ = e.controlPoint(noRecords)
        #expect(e.controlPoint(noRecords) == .write(RACP.reportAllRecords()))
        #expect(e.meterWasReset && e.phase == .transferring)
        for seq: UInt16 in [1, 2, 3] { e.measurement(try measurement(seq)) }
        #expect(e.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(e.records.map(\.sequenceNumber) == [1, 2, 3])
        // Silent while asked: the reason names the record.
        var f = GlucoseRecordDownload(after: .sequenceOnly(6))
        _ = f.start()
        _ = f.controlPoint(cannotCount)
        _ = f.controlPoint(noRecords)
        #expect(f.meterSilent() == .finished(.failed(reason: "the meter did not answer whether it still holds record 6")))
    }

    @Test("a measurement whose context follows is whole only with its context; a resent record is kept once")
    func wholeRecordsOnly() throws {
        var d = GlucoseRecordDownload(after: nil)
        _ = d.start()
        _ = d.controlPoint(.numberOfStoredRecords(3))
        d.measurement(try measurement(1, context: true))
        d.context(try context(1))
        d.measurement(try measurement(2))
        d.measurement(try measurement(2))  // resent
        d.measurement(try measurement(3, context: true))  // its context never comes
        #expect(d.controlPoint(Self.recordsDone) == .wait)  // 2 of 3: wait for stragglers
        #expect(d.meterSilent() == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [1, 2])
        #expect(d.records[0].context?.sequenceNumber == 1)
        #expect(d.records[1].context == nil)
        // A context for another measurement is not attached (and counted as stray at the end).
        var e = GlucoseRecordDownload(after: nil)
        _ = e.start()
        _ = e.controlPoint(.numberOfStoredRecords(1))
        e.measurement(try measurement(7, context: true))
        e.context(try context(8))
        #expect(e.controlPoint(Self.recordsDone) == .wait)
        #expect(e.meterSilent() == .finished(.complete))
        #expect(e.records.isEmpty)
        #expect(e.strayValues == 1)
    }

    /// Seen with BlueZ in the VM: measurement and context come through two AcquireNotify
    /// sockets, and the context of record 3 was read before record 3's measurement, or record
    /// 4's measurement before record 3's context; record 3 was lost (4 of 5 stored).
    @Test("measurement and context match by sequence number in either order")
    func contextBeforeItsMeasurement() throws {
        var d = GlucoseRecordDownload(after: nil)
        _ = d.start()
        _ = d.controlPoint(.numberOfStoredRecords(4))
        d.measurement(try measurement(1))
        d.context(try context(3))  // before its measurement
        d.measurement(try measurement(2, context: true))
        d.measurement(try measurement(3, context: true))
        d.measurement(try measurement(4))  // before record 2's context
        #expect(d.context(try context(2)) == .wait)
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [1, 2, 3, 4])
        #expect(d.records.map { $0.context?.sequenceNumber } == [nil, 2, 3, nil])
        #expect(d.strayValues == 0)
    }

    @Test("records still on their way when the meter says it is done are taken until the count is reached")
    func draining() throws {
        var d = GlucoseRecordDownload(after: nil)
        _ = d.start()
        _ = d.controlPoint(.numberOfStoredRecords(3))
        d.measurement(try measurement(1))
        #expect(d.controlPoint(Self.recordsDone) == .wait)
        #expect(d.phase == .draining)
        #expect(d.measurement(try measurement(2, context: true)) == .wait)
        #expect(d.context(try context(2)) == .wait)
        #expect(d.measurement(try measurement(3)) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [1, 2, 3])
        // Silence while draining: done with what arrived (the meter said it sent everything).
        var e = GlucoseRecordDownload(after: nil)
        _ = e.start()
        _ = e.controlPoint(.numberOfStoredRecords(2))
        e.measurement(try measurement(1))
        #expect(e.controlPoint(Self.recordsDone) == .wait)
        #expect(e.meterSilent() == .finished(.complete))
        #expect(e.records.count == 1)
    }

    @Test("a meter that stops mid-transfer: what arrived whole is kept, the reason says how many")
    func meterSilent() throws {
        var d = GlucoseRecordDownload(after: nil)
        _ = d.start()
        _ = d.controlPoint(.numberOfStoredRecords(5))
        d.measurement(try measurement(1))
        d.measurement(try measurement(2))
        d.measurement(try measurement(3, context: true))
        #expect(d.meterSilent() == .finished(.failed(reason: "the meter stopped sending (2 of 5 records arrived)")))
        #expect(d.records.map(\.sequenceNumber) == [1, 2])
        // Values after the end are stray.
        d.measurement(try measurement(4))
        #expect(d.records.count == 2)
        // A meter that never answers the count.
        var silent = GlucoseRecordDownload(after: nil)
        _ = silent.start()
        #expect(silent.meterSilent() == .finished(.failed(reason: "the meter did not answer \"report number of stored records\"")))
    }

    @Test("refusals: counting unsupported goes on; an aborted or refused report fails with the code")
    func refusals() throws {
        var d = GlucoseRecordDownload(after: nil)
        _ = d.start()
        #expect(d.controlPoint(.responseCode(request: 4, code: .opCodeNotSupported)) == .write([0x01, 0x01]))
        #expect(d.expected == nil)
        d.measurement(try measurement(1))
        #expect(d.controlPoint(.responseCode(request: 1, code: .procedureNotCompleted))
                == .finished(.failed(reason: "the meter answered procedure not completed (1 record arrived)")))
        #expect(d.records.count == 1)
        var e = GlucoseRecordDownload(after: .sequenceOnly(9))
        _ = e.start()
        _ = e.controlPoint(.numberOfStoredRecords(4))
        #expect(e.controlPoint(.responseCode(request: 1, code: .operatorNotSupported))
                == .finished(.failed(reason: "the meter answered operator not supported (0 of 4 records arrived)")))
        // A measurement before the transfer is stray.
        var f = GlucoseRecordDownload(after: nil)
        f.measurement(try measurement(1))
        #expect(f.strayValues == 1)
        _ = f.start()
        #expect(f.controlPoint(Self.recordsDone) == .wait)  // not while counting
        #expect(f.strayValues == 2)
    }
}
