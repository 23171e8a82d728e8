import HealthModel
import Testing
@testable import GATTProfiles

/// What the `ble` driver asks a glucose meter for on each connection, and the reset rule: a
/// meter holding neither the last stored record nor any after it was reset.
@Suite struct GlucoseCatchUpTests {
    typealias RACP = RecordAccessControlPoint

    static func records(_ code: RACP.ResponseCode) -> RACP.Response {
        .responseCode(request: RACP.OpCode.reportStoredRecords.rawValue, code: code)
    }

    @Test("nothing stored: every record, no answer awaited")
    func firstConnection() {
        var c = GlucoseCatchUp(after: nil)
        #expect(c.start() == .write([0x01, 0x01]))
        #expect(!c.awaitsResponse)
        #expect(c.response(Self.records(.noRecordsFound)) == .done)
    }

    @Test("records after the stored one arrive: nothing more to ask")
    func newRecords() {
        var c = GlucoseCatchUp(after: .sequenceOnly(4))
        #expect(c.start() == .write([0x01, 0x03, 0x01, 0x05, 0x00]))  // >= 5
        #expect(c.awaitsResponse)
        #expect(c.response(.numberOfStoredRecords(2)) == .wait)  // not the answer to "report records"
        #expect(c.response(.responseCode(request: RACP.OpCode.abortOperation.rawValue, code: .success)) == .wait)
        #expect(c.response(Self.records(.success)) == .done)
        #expect(c.phase == .done && !c.awaitsResponse)
    }

    @Test("nothing new, and the meter still holds the stored record: not reset")
    func nothingNew() {
        var c = GlucoseCatchUp(after: .sequenceOnly(0x0104))
        #expect(c.start() == .write([0x01, 0x03, 0x01, 0x05, 0x01]))
        #expect(c.response(Self.records(.noRecordsFound)) == .write([0x01, 0x03, 0x01, 0x04, 0x01]))  // >= the stored one
        #expect(c.phase == .storedRecord && c.awaitsResponse)
        #expect(c.response(Self.records(.success)) == .done)
    }

    @Test("neither the stored record nor any after it: the meter was reset, every record is asked for")
    func meterReset() {
        var c = GlucoseCatchUp(after: .sequenceOnly(20))
        #expect(c.start() == .write([0x01, 0x03, 0x01, 21, 0x00]))
        #expect(c.response(Self.records(.noRecordsFound)) == .write([0x01, 0x03, 0x01, 20, 0x00]))
        #expect(c.response(Self.records(.noRecordsFound)) == .meterReset(write: [0x01, 0x01]))
        #expect(c.phase == .allRecords && !c.awaitsResponse)
        #expect(c.response(Self.records(.noRecordsFound)) == .done)  // an empty meter: nothing more
    }

    @Test("a meter that refuses the filter: nothing more to ask (no loop)")
    func refused() {
        var c = GlucoseCatchUp(after: .sequenceOnly(3))
        _ = c.start()
        #expect(c.response(Self.records(.operatorNotSupported)) == .done)
        var d = GlucoseCatchUp(after: .sequenceOnly(3))
        _ = d.start()
        _ = d.response(Self.records(.noRecordsFound))
        #expect(d.response(Self.records(.invalidOperand)) == .done)
    }

    @Test("after 65535 comes 0: every record")
    func wrap() {
        var c = GlucoseCatchUp(after: .sequenceOnly(.max))
        #expect(c.start() == .write([0x01, 0x01]))
        #expect(!c.awaitsResponse)
    }

    static let stored = GlucoseCursor(sequence: 4, record: [0x02, 0x04, 0x00])

    @Test("the stored record known: asked for from it on; the same record comes back: the rest are new")
    func storedRecordTheSame() {
        var c = GlucoseCatchUp(after: Self.stored)
        #expect(c.start() == .write([0x01, 0x03, 0x01, 0x04, 0x00]))  // >= 4
        #expect(c.response(Self.records(.success)) == .wait)  // the check is still to come
        #expect(c.phase == .awaitingCheck && c.awaitsResponse)
        #expect(c.storedRecordChecked(same: true) == .done)
        // The check first, then the response.
        var d = GlucoseCatchUp(after: Self.stored)
        _ = d.start()
        #expect(d.storedRecordChecked(same: true) == .wait)
        #expect(d.response(Self.records(.success)) == .done)
        #expect(!d.storedRecordChanged)
    }

    @Test("the stored record comes back changed (reset, then filled past it): every record, after the transfer under way")
    func storedRecordChanged() {
        var c = GlucoseCatchUp(after: Self.stored)
        _ = c.start()
        #expect(c.storedRecordChecked(same: false) == .wait)  // the meter is still sending
        #expect(c.response(Self.records(.success)) == .meterReset(write: [0x01, 0x01]))
        #expect(c.storedRecordChanged && c.phase == .allRecords && !c.awaitsResponse)
        var d = GlucoseCatchUp(after: Self.stored)
        _ = d.start()
        #expect(d.response(Self.records(.success)) == .wait)
        #expect(d.storedRecordChecked(same: false) == .meterReset(write: [0x01, 0x01]))
        #expect(d.storedRecordChanged)
    }

    @Test("the stored record known, and nothing from it on: reset at once (no second question)")
    func storedRecordGone() {
        var c = GlucoseCatchUp(after: Self.stored)
        _ = c.start()
        #expect(c.response(Self.records(.noRecordsFound)) == .meterReset(write: [0x01, 0x01]))
        #expect(!c.storedRecordChanged)
        // A meter that refuses: nothing more, and a late check changes nothing.
        var d = GlucoseCatchUp(after: Self.stored)
        _ = d.start()
        #expect(d.response(Self.records(.operatorNotSupported)) == .done)
        #expect(d.storedRecordChecked(same: false) == .done)
    }
}

@Suite struct GlucoseCursorTrackerTests {
    static func cursor(_ seq: UInt16, _ tag: UInt8) -> GlucoseCursor { GlucoseCursor(sequence: seq, record: [0x02, UInt8(seq), tag]) }

    @Test("the cursor follows the highest sequence number, with that record's bytes")
    func follows() {
        var t = GlucoseCursorTracker(stored: nil)
        for seq: UInt16 in [1, 2, 3] { #expect(t.received(sequence: seq, value: [0x02, UInt8(seq), 0xA]) == .none) }
        #expect(t.cursor == Self.cursor(3, 0xA))
        #expect(t.received(sequence: 2, value: [0x02, 2, 0xA]) == .none)  // an older one again: no change
        #expect(t.cursor == Self.cursor(3, 0xA))
    }

    @Test("the stored record again: the same, or changed (reset): the cursor then stays until the records from the start")
    func checks() {
        var t = GlucoseCursorTracker(stored: Self.cursor(3, 0xA))
        #expect(t.received(sequence: 3, value: [0x02, 3, 0xA]) == .same)
        #expect(t.received(sequence: 4, value: [0x02, 4, 0xA]) == .none)
        #expect(t.cursor == Self.cursor(4, 0xA))

        var r = GlucoseCursorTracker(stored: Self.cursor(3, 0xA))
        #expect(r.received(sequence: 3, value: [0x02, 3, 0xB]) == .differs)
        #expect(r.resetAt == 3)
        // The rest of the transfer (4, 5): stored, but the cursor does not move past records
        // (1, 2) not stored yet.
        #expect(r.received(sequence: 4, value: [0x02, 4, 0xB]) == .none)
        #expect(r.received(sequence: 5, value: [0x02, 5, 0xB]) == .none)
        #expect(r.cursor == Self.cursor(3, 0xA))
        r.meterReset()  // every record asked for: the cursor still stays
        #expect(r.cursor == Self.cursor(3, 0xA) && r.resetAt == 3)
        // The link lost before the first of them came: the next connection asks from 3 again,
        // and record 3 is still another one.
        #expect(r.requesting() == Self.cursor(3, 0xA))
        #expect(r.received(sequence: 3, value: [0x02, 3, 0xB]) == .differs)
        #expect(r.cursor == Self.cursor(3, 0xA))
        r.meterReset()
        // Every record, from 1: the cursor starts over and follows them.
        for seq: UInt16 in 1...5 { #expect(r.received(sequence: seq, value: [0x02, UInt8(seq), 0xB]) == .none) }
        #expect(r.cursor == Self.cursor(5, 0xB) && r.resetAt == nil)
    }

    @Test("a meter reset with one record stored: its new record 1 is another one, then every record from 1 sets the cursor")
    func resetAtTheFirstRecord() {
        var t = GlucoseCursorTracker(stored: Self.cursor(1, 0xA))
        #expect(t.requesting() == Self.cursor(1, 0xA))
        #expect(t.received(sequence: 1, value: [0x02, 1, 0xB]) == .differs)
        #expect(t.received(sequence: 2, value: [0x02, 2, 0xB]) == .none)
        #expect(t.cursor == Self.cursor(1, 0xA))
        t.meterReset()
        for seq: UInt16 in [1, 2] { #expect(t.received(sequence: seq, value: [0x02, UInt8(seq), 0xB]) == .none) }
        #expect(t.cursor == Self.cursor(2, 0xB) && t.resetAt == nil)
    }

    @Test("a reset found without a changed record forgets the cursor; a cursor without a record checks nothing")
    func forgetAndUnknown() {
        var t = GlucoseCursorTracker(stored: Self.cursor(6, 0xA))
        t.meterReset()
        #expect(t.cursor == nil)
        #expect(t.received(sequence: 1, value: [0x02, 1, 0xB]) == .none)
        #expect(t.cursor == Self.cursor(1, 0xB))
        var u = GlucoseCursorTracker(stored: .sequenceOnly(3))
        #expect(u.received(sequence: 3, value: [0x02, 3, 0xB]) == .none)
        #expect(u.cursor == .sequenceOnly(3))
    }
}


extension GlucoseCursor {
    /// A cursor kept before HealthGate stored the record: the sequence number only.
    static func sequenceOnly(_ sequence: UInt16) -> GlucoseCursor { GlucoseCursor(sequence: sequence, record: nil) }
}
