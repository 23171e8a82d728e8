import Testing
@testable import GATTProfiles

/// The RACP download state machine: requests for all records and for records since a sequence
/// number, a complete transfer, whole records only, a meter that stops, refuses or has nothing.
@Suite struct GlucoseRecordDownloadTests {
    typealias RACP = RecordAccessControlPoint

    /// A measurement with a concentration (kg/L), 2026-11-24 10:MM:00; the context flag when asked.
    func measurement(_ seq: UInt16, context: Bool = false) throws -> GlucoseMeasurement {
        let flags: UInt8 = 0x02 | (context ? 0x10 : 0)
        let bytes: [UInt8] = [flags, UInt8(seq & 0xFF), UInt8(seq >> 8), 0xEA, 0x07, 11, 24, 10, UInt8(seq % 60), 0,
                              0x5A, 0xB0, 0x11]
        return try GlucoseMeasurement.decode(bytes)
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
        var d = GlucoseRecordDownload(after: 0x0102)
        #expect(d.firstSequence == 0x0103)
        #expect(d.start() == [0x04, 0x03, 0x01, 0x03, 0x01])
        #expect(d.controlPoint(.numberOfStoredRecords(1)) == .write([0x01, 0x03, 0x01, 0x03, 0x01]))
        d.measurement(try measurement(0x0103))
        #expect(d.controlPoint(Self.recordsDone) == .finished(.complete))
        #expect(d.records.map(\.sequenceNumber) == [0x0103])
        // After 65535 comes 0: every record.
        var wrapped = GlucoseRecordDownload(after: .max)
        #expect(wrapped.firstSequence == nil)
        #expect(wrapped.start() == [0x04, 0x01])
    }

    @Test("nothing new: a count of 0 ends at once; 'no records found' too")
    func noRecords() {
        var d = GlucoseRecordDownload(after: 5)
        _ = d.start()
        #expect(d.controlPoint(.numberOfStoredRecords(0)) == .finished(.noRecords))
        var e = GlucoseRecordDownload(after: 5)
        _ = e.start()
        #expect(e.controlPoint(.numberOfStoredRecords(2)) == .write(RACP.reportRecords(fromSequenceNumber: 6)))
        #expect(e.controlPoint(.responseCode(request: 1, code: .noRecordsFound)) == .finished(.noRecords))
        #expect(e.records.isEmpty)
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
        var e = GlucoseRecordDownload(after: 9)
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
