import HealthModel

/// Downloading a glucose meter's stored records through its Record Access Control Point: a pure
/// state machine (no I/O, no clock). The edge writes what `start()` and each step return to the
/// control point (0x2A52), feeds it the control point's indications and the Glucose Measurement
/// (0x2A18) and Context (0x2A34) notifications, and calls `meterSilent()` when nothing arrived
/// for its timeout.
///
/// The procedure: "report number of stored records" (all, or from the stored record on), then
/// "report stored records" with the same filter; the meter sends the records and ends with a
/// response code. When the stored record `after` is known (``GlucoseCursor/record``), the filter
/// is ">= after": the record comes again and is compared with the stored one; another record
/// under that number, or none at all from it on, means the meter was reset (and perhaps filled
/// past `after` since), and every record it holds is then downloaded (`meterWasReset`). When it
/// is not known, the filter is ">= after + 1", and a meter with nothing after `after` is asked
/// whether it still holds record `after` itself: one that does has nothing new; one that holds
/// neither it nor anything after it was reset. (The same rule as ``GlucoseCatchUp`` in the
/// daemon.) A record is whole when its measurement arrived and, if the measurement says a context
/// follows, its context too; only whole records are kept (`records`, by sequence number: a record
/// sent twice is kept once). Measurement and context are matched by sequence number, in either
/// order: they are different characteristics, and a host may deliver them by different paths
/// (with BlueZ, one `AcquireNotify` socket each).
public struct GlucoseRecordDownload: Sendable {
    /// One stored reading of the meter.
    public struct Record: Hashable, Sendable {
        public var measurement: GlucoseMeasurement
        public var context: GlucoseMeasurementContext?
        /// The measurement as the meter sent it, when the edge gave it.
        public var value: [UInt8]?
        public var sequenceNumber: UInt16 { measurement.sequenceNumber }
    }

    public enum Phase: Equatable, Sendable {
        case idle
        /// "Report number of stored records" sent.
        case counting
        /// Nothing after `after`: asked whether the meter still holds record `after` ("report
        /// number of stored records >= after", or "report stored records >= after" from a meter
        /// that cannot count).
        case checkingReset
        /// "Report stored records" sent; records arrive.
        case transferring
        /// The meter said it sent everything, but fewer whole records than it counted arrived:
        /// values still on their way (notifications and the control point's indication may
        /// reach the host by different paths) are taken until the count is reached or the meter
        /// is silent.
        case draining
        case finished(Outcome)
    }

    public enum Outcome: Equatable, Sendable {
        /// Every record the meter reported arrived (`records` holds the whole ones).
        case complete
        /// The meter has no record matching the filter.
        case noRecords
        /// The meter refused or stopped; `reason` in plain words. What arrived whole is kept.
        case failed(reason: String)
    }

    /// What the edge does next.
    public enum Step: Equatable, Sendable {
        /// Write these bytes to the control point (with a response).
        case write([UInt8])
        /// Keep waiting for values.
        case wait
        /// The download is over.
        case finished(Outcome)
    }

    /// The sequence number the download starts after (the last one stored); nil: every record.
    public let after: UInt16?
    /// Where the stored records end: record `after`, as the meter sent it, is compared with what
    /// comes under its number (``GlucoseCursor/isStoredRecord(sequence:value:)``).
    private let cursor: GlucoseCursor?
    /// Whether record `after` is known, so that it is asked for again and checked.
    private var checksStoredRecord: Bool { cursor?.record != nil }
    /// Record `after` came again, and not as it was stored: the meter was reset. Every record is
    /// asked for once the transfer under way has ended.
    public private(set) var storedRecordDiffers = false
    /// The meter was reset (record `after` came back changed, or it holds neither it nor any
    /// after it): every record it holds is asked for.
    public private(set) var meterWasReset = false
    /// The meter answered a count ("report number of stored records").
    private var counts = false
    public private(set) var phase: Phase = .idle
    /// How many records the meter said it holds for the filter (nil until it says, or if it
    /// does not support counting).
    public private(set) var expected: Int?
    /// Whole records, by sequence number.
    public private(set) var recordsBySequence: [UInt16: Record] = [:]
    /// Measurements waiting for their context, and contexts waiting for their measurement.
    private var pendingMeasurements: [UInt16: (measurement: GlucoseMeasurement, value: [UInt8]?)] = [:]
    private var pendingContexts: [UInt16: GlucoseMeasurementContext] = [:]
    /// Values that did not belong (a value before or after the transfer, a context whose
    /// measurement never came): counted, not fatal.
    public private(set) var strayValues = 0

    public init(after cursor: GlucoseCursor?) {
        after = cursor?.sequence
        self.cursor = cursor
    }

    /// The first sequence number asked for: the stored record's when it is known (to check it),
    /// else the next one; nil for all records (also once the meter was found reset).
    public var firstSequence: UInt16? {
        guard !meterWasReset, let after, after < UInt16.max else { return nil }  // after 65535 comes 0: all
        return checksStoredRecord ? after : after + 1
    }

    /// The whole records, in sequence order.
    public var records: [Record] { recordsBySequence.keys.sorted().compactMap { recordsBySequence[$0] } }

    /// The first write: "report number of stored records".
    public mutating func start() -> [UInt8] {
        phase = .counting
        return firstSequence.map(RecordAccessControlPoint.reportNumberOfRecords(fromSequenceNumber:))
            ?? RecordAccessControlPoint.reportNumberOfAllRecords()
    }

    private var reportRequest: [UInt8] {
        firstSequence.map(RecordAccessControlPoint.reportRecords(fromSequenceNumber:)) ?? RecordAccessControlPoint.reportAllRecords()
    }

    private mutating func finish(_ outcome: Outcome) -> Step {
        // A measurement still waiting for its context is not whole.
        strayValues += pendingContexts.count
        pendingMeasurements = [:]
        pendingContexts = [:]
        phase = .finished(outcome)
        return .finished(outcome)
    }

    /// Nothing after `after`: ask for record `after` itself, the way the meter answers.
    private mutating func checkReset() -> Step {
        guard let after, firstSequence != nil, !checksStoredRecord else { return finish(.noRecords) }
        phase = .checkingReset
        return .write(counts ? RecordAccessControlPoint.reportNumberOfRecords(fromSequenceNumber: after)
                             : RecordAccessControlPoint.reportRecords(fromSequenceNumber: after))
    }

    /// Record `after` is gone too: every record the meter holds, counted first if it counts.
    private mutating func downloadAfterReset() -> Step {
        meterWasReset = true
        expected = nil
        phase = counts ? .counting : .transferring
        return .write(counts ? RecordAccessControlPoint.reportNumberOfAllRecords() : RecordAccessControlPoint.reportAllRecords())
    }

    /// An indication of the control point.
    public mutating func controlPoint(_ response: RecordAccessControlPoint.Response) -> Step {
        switch (phase, response) {
        case (.counting, .numberOfStoredRecords(let n)):
            counts = true
            expected = Int(n)
            if n == 0 { return checksStoredRecord && !meterWasReset ? downloadAfterReset() : checkReset() }
            phase = .transferring
            return .write(reportRequest)
        case (.counting, .responseCode(RecordAccessControlPoint.OpCode.reportNumberOfStoredRecords.rawValue, _)):
            // The meter cannot count: ask for the records all the same.
            phase = .transferring
            return .write(reportRequest)
        case (.checkingReset, .numberOfStoredRecords(let n)):
            expected = 0
            return n == 0 ? downloadAfterReset() : finish(.noRecords)
        case (.checkingReset, .responseCode(RecordAccessControlPoint.OpCode.reportStoredRecords.rawValue, let code)):
            // A meter that cannot count sent record `after` again (kept once, by its identity) or
            // said it has none.
            switch code {
            case .success: return finish(recordsBySequence.isEmpty ? .noRecords : .complete)
            case .noRecordsFound: return downloadAfterReset()
            default: return finish(.failed(reason: "the meter answered \(Self.describe(code)) \(progressText)"))
            }
        case (.transferring, .responseCode(RecordAccessControlPoint.OpCode.reportStoredRecords.rawValue, let code)):
            switch code {
            case .success:
                if let expected, recordsBySequence.count < expected {
                    phase = .draining
                    return .wait
                }
                return transferred()
            case .noRecordsFound:
                if recordsBySequence.isEmpty, checksStoredRecord, !meterWasReset { return downloadAfterReset() }
                return recordsBySequence.isEmpty ? checkReset() : transferred()
            default:
                return finish(.failed(reason: "the meter answered \(Self.describe(code)) \(progressText)"))
            }
        case (.transferring, .responseCode(let request, let code)):
            return finish(.failed(reason: "the meter answered \(Self.describe(code)) to op code \(request) \(progressText)"))
        default:
            strayValues += 1
            return .wait
        }
    }

    private var receiving: Bool { phase == .transferring || phase == .draining || (phase == .checkingReset && !counts) }

    /// While draining: finished once the count is reached.
    private mutating func afterValue() -> Step {
        if phase == .draining, let expected, recordsBySequence.count >= expected { return transferred() }
        return .wait
    }

    /// The transfer is over: complete, unless the stored record came back changed (then every
    /// record the reset meter holds is asked for).
    private mutating func transferred() -> Step {
        storedRecordDiffers && !meterWasReset ? downloadAfterReset() : finish(.complete)
    }

    /// A Glucose Measurement notification, decoded, and as the meter sent it (`value`; without
    /// it the stored record cannot be checked).
    @discardableResult
    public mutating func measurement(_ m: GlucoseMeasurement, value: [UInt8]? = nil) -> Step {
        guard receiving else { strayValues += 1; return .wait }
        if !meterWasReset, let value, cursor?.isStoredRecord(sequence: m.sequenceNumber, value: value) == false {
            storedRecordDiffers = true
        }
        if !m.contextFollows {
            recordsBySequence[m.sequenceNumber] = Record(measurement: m, context: nil, value: value)
        } else if let c = pendingContexts.removeValue(forKey: m.sequenceNumber) {
            recordsBySequence[m.sequenceNumber] = Record(measurement: m, context: c, value: value)
        } else {
            pendingMeasurements[m.sequenceNumber] = (m, value)
        }
        return afterValue()
    }

    /// A Glucose Measurement Context notification: completes the measurement it follows.
    @discardableResult
    public mutating func context(_ c: GlucoseMeasurementContext) -> Step {
        guard receiving else { strayValues += 1; return .wait }
        if let (m, value) = pendingMeasurements.removeValue(forKey: c.sequenceNumber) {
            recordsBySequence[m.sequenceNumber] = Record(measurement: m, context: c, value: value)
        } else {
            pendingContexts[c.sequenceNumber] = c
        }
        return afterValue()
    }

    /// Nothing arrived for the edge's timeout: the download ends with what arrived whole.
    public mutating func meterSilent() -> Step {
        switch phase {
        case .finished(let outcome): return .finished(outcome)
        case .idle: return finish(.failed(reason: "the download was not started"))
        case .counting: return finish(.failed(reason: "the meter did not answer \"report number of stored records\""))
        case .checkingReset: return finish(.failed(reason: "the meter did not answer whether it still holds record \(after ?? 0)"))
        case .transferring: return finish(.failed(reason: "the meter stopped sending \(progressText)"))
        case .draining: return transferred()  // the meter said it was done
        }
    }

    /// "(3 of 5 records arrived)" or "(3 records arrived)".
    public var progressText: String {
        "(\(recordsBySequence.count)\(expected.map { " of \($0)" } ?? "") record\(expected ?? recordsBySequence.count == 1 ? "" : "s") arrived)"
    }

    static func describe(_ code: RecordAccessControlPoint.ResponseCode) -> String {
        switch code {
        case .success: "success"
        case .opCodeNotSupported: "op code not supported"
        case .invalidOperator: "invalid operator"
        case .operatorNotSupported: "operator not supported"
        case .invalidOperand: "invalid operand"
        case .noRecordsFound: "no records found"
        case .abortUnsuccessful: "abort unsuccessful"
        case .procedureNotCompleted: "procedure not completed"
        case .operandNotSupported: "operand not supported"
        case .other(let v): "response code \(v)"
        }
    }
}
