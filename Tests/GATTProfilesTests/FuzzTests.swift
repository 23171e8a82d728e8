import TestSupport
import Testing
@testable import GATTProfiles

/// Deterministic seeded fuzzing: random byte strings per decoder, each judged against the value's
/// layout written out independently from the GATT specifications (`SpecLayout`): a value shorter
/// than its flags require is rejected as truncated exactly where the bytes run out; a value that
/// is long enough decodes and reports the rest as ignored trailing bytes (or, where the
/// specification forbids a value, is rejected at that field). Nothing traps.
@Suite struct FuzzTests {
    static let iterations = 20_000

    @Test("random byte strings decode exactly as the specification's layout says", arguments: GATTProfileDecoder.supportedCharacteristics.sorted())
    func fuzz(characteristic: UInt16) async {
        var rng = SeededGenerator(seed: 0xF022_0000 | UInt64(characteristic))
        var decoded = 0, truncated = 0, invalid = 0
        var problems: [String] = []
        for i in 0..<Self.iterations {
            // A long CPU-bound loop gives the (2-thread) pool to other tests now and then, or
            // their timers and processes starve.
            if i % 500 == 0 { await Task.yield() }
            // Mostly short values (where the flags matter), some long ones, some all-0xFF flags.
            let length = i % 10 == 0 ? Int.random(in: 0...600, using: &rng) : Int.random(in: 0...48, using: &rng)
            var bytes = (0..<length).map { _ in rng.u8() }
            if i % 7 == 0, !bytes.isEmpty { bytes[0] = 0xFF }
            let layout = SpecLayout.of(characteristic, bytes)
            let problem: String?
            do {
                let reading = try GATTProfileDecoder.decode(characteristic: characteristic, bytes)
                decoded += 1
                problem = SpecLayout.checkDecoded(reading, characteristic, bytes, layout)
            } catch {
                problem = SpecLayout.checkRejected(error, characteristic, bytes, layout)
                if case .truncated = error.reason { truncated += 1 } else { invalid += 1 }
            }
            if let problem, problems.count < 10 { problems.append("\(bytes.map { String(format: "%02X", $0) }.joined(separator: " ")): \(problem)") }
        }
        #expect(problems.isEmpty, "\(problems)")
        // The generator reaches both outcomes (a loop that rejects everything tests nothing).
        // (A RACP response needs one of two op codes: few random values decode.)
        #expect(decoded > (characteristic == GATTCharacteristic.recordAccessControlPoint ? 50 : Self.iterations / 20),
                "decoded \(decoded)")
        if !DeviceInformation.stringCharacteristics.contains(characteristic) {
            #expect(truncated > 0, "truncated \(truncated)")
        }
        if SpecLayout.validates(characteristic) { #expect(invalid > 0, "invalid \(invalid)") }
    }

    @Test("decoding is deterministic and ignores nothing silently")
    func trailingBytesAreCounted() throws {
        var rng = SeededGenerator(seed: 0x7A11)
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 2...30, using: &rng)).map { _ in rng.u8() }
            let extra = [rng.u8(), rng.u8()]
            if let a = try? TreadmillData.decode(bytes) {
                let b = try TreadmillData.decode(bytes + extra)
                #expect(b.ignoredTrailingBytes == a.ignoredTrailingBytes + 2)
                var c = b
                c.ignoredTrailingBytes = a.ignoredTrailingBytes
                #expect(c == a)
            }
            if let a = try? GlucoseMeasurement.decode(bytes) {
                #expect(try GlucoseMeasurement.decode(bytes + extra).ignoredTrailingBytes == a.ignoredTrailingBytes + 2)
            }
        }
    }
}

/// Value layouts of the decoded characteristics, from the Bluetooth SIG specifications (HRS, CSCS,
/// RSCS, CPS, WSS, BCS, BLS, HTS, PLXS, GLS, FTMS, DIS, BAS), independent of the decoders: a
/// value is its flags, fixed fields, and one optional field per flag bit.
struct SpecLayout {
    var flagsSize = 0
    var fixed: Int
    /// (flag bit, field bytes); `whenClear`: the field is present when the bit is 0 (FTMS "More Data").
    var optional: [(bit: Int, size: Int, whenClear: Bool)] = []

    static func bits(_ list: [(Int, Int)]) -> [(bit: Int, size: Int, whenClear: Bool)] { list.map { ($0.0, $0.1, false) } }

    static let layouts: [UInt16: SpecLayout] = {
        typealias C = GATTCharacteristic
        let dateTime = 7, energy = 5
        var l: [UInt16: SpecLayout] = [
            // Heart rate: uint8, or uint16 with bit 0; energy expended (bit 3); RR intervals (bit 4) fill the rest.
            C.heartRateMeasurement: SpecLayout(flagsSize: 1, fixed: 1, optional: bits([(0, 1), (3, 2)])),
            C.bodySensorLocation: SpecLayout(fixed: 1),
            C.batteryLevel: SpecLayout(fixed: 1),
            C.systemID: SpecLayout(fixed: 8),
            C.pnpID: SpecLayout(fixed: 7),
            C.cscMeasurement: SpecLayout(flagsSize: 1, fixed: 0, optional: bits([(0, 6), (1, 4)])),
            C.cscFeature: SpecLayout(fixed: 2),
            C.rscMeasurement: SpecLayout(flagsSize: 1, fixed: 3, optional: bits([(0, 2), (1, 4)])),
            C.cyclingPowerMeasurement: SpecLayout(flagsSize: 2, fixed: 2, optional: bits([
                (0, 1), (2, 2), (4, 6), (5, 4), (6, 4), (7, 4), (8, 3), (9, 2), (10, 2), (11, 2)])),
            C.cyclingPowerFeature: SpecLayout(fixed: 4),
            C.fitnessMachineFeature: SpecLayout(fixed: 8),
            C.treadmillData: SpecLayout(flagsSize: 2, fixed: 0, optional: [(0, 2, true)] + bits([
                (1, 2), (2, 3), (3, 4), (4, 4), (5, 1), (6, 1), (7, energy), (8, 1), (9, 1), (10, 2), (11, 2), (12, 4)])),
            C.crossTrainerData: SpecLayout(flagsSize: 3, fixed: 0, optional: [(0, 2, true)] + bits([
                (1, 2), (2, 3), (3, 4), (4, 2), (5, 4), (6, 4), (7, 2), (8, 2), (9, 2), (10, energy), (11, 1), (12, 1),
                (13, 2), (14, 2)])),
            C.rowerData: SpecLayout(flagsSize: 2, fixed: 0, optional: [(0, 3, true)] + bits([
                (1, 1), (2, 3), (3, 2), (4, 2), (5, 2), (6, 2), (7, 2), (8, energy), (9, 1), (10, 1), (11, 2), (12, 2)])),
            C.indoorBikeData: SpecLayout(flagsSize: 2, fixed: 0, optional: [(0, 2, true)] + bits([
                (1, 2), (2, 2), (3, 2), (4, 3), (5, 2), (6, 2), (7, 2), (8, energy), (9, 1), (10, 1), (11, 2), (12, 2)])),
            C.weightMeasurement: SpecLayout(flagsSize: 1, fixed: 2, optional: bits([(1, dateTime), (2, 1), (3, 4)])),
            C.weightScaleFeature: SpecLayout(fixed: 4),
            C.bodyCompositionMeasurement: SpecLayout(flagsSize: 2, fixed: 2, optional: bits([
                (1, dateTime), (2, 1), (3, 2), (4, 2), (5, 2), (6, 2), (7, 2), (8, 2), (9, 2), (10, 2), (11, 2)])),
            C.bloodPressureMeasurement: SpecLayout(flagsSize: 1, fixed: 6, optional: bits([(1, dateTime), (2, 2), (3, 1), (4, 2)])),
            C.temperatureMeasurement: SpecLayout(flagsSize: 1, fixed: 4, optional: bits([(1, dateTime), (2, 1)])),
            C.plxSpotCheckMeasurement: SpecLayout(flagsSize: 1, fixed: 4, optional: bits([(0, dateTime), (1, 2), (2, 3), (3, 2)])),
            C.plxContinuousMeasurement: SpecLayout(flagsSize: 1, fixed: 4, optional: bits([(0, 4), (1, 4), (2, 2), (3, 3), (4, 2)])),
            C.glucoseMeasurement: SpecLayout(flagsSize: 1, fixed: 2 + dateTime, optional: bits([(0, 2), (1, 3), (3, 2)])),
            C.glucoseMeasurementContext: SpecLayout(flagsSize: 1, fixed: 2, optional: bits([
                (7, 1), (0, 3), (1, 1), (2, 1), (3, 3), (4, 3), (6, 2)])),
            // Record Access Control Point responses: op code, operator, then a 2-byte operand
            // (0x05 number of stored records; 0x06 request op code + response code).
            C.recordAccessControlPoint: SpecLayout(fixed: 4),
        ]
        l[C.intermediateCuffPressure] = l[C.bloodPressureMeasurement]
        l[C.intermediateTemperature] = l[C.temperatureMeasurement]
        return l
    }()

    /// The bytes `bytes` must have for the flags they carry (the flags' own size while they are cut).
    func required(_ bytes: [UInt8]) -> Int {
        guard bytes.count >= flagsSize else { return flagsSize }
        var flags: UInt64 = 0
        for i in 0..<flagsSize { flags |= UInt64(bytes[i]) << (8 * UInt64(i)) }
        return flagsSize + fixed + optional.reduce(0) { sum, field in
            let set = flags & (1 << UInt64(field.bit)) != 0
            return sum + (set != field.whenClear ? field.size : 0)
        }
    }

    /// The required length of `bytes` as a value of `characteristic`; nil for the Device
    /// Information strings (any bytes are a string).
    static func of(_ characteristic: UInt16, _ bytes: [UInt8]) -> Int? {
        layouts[characteristic]?.required(bytes)
    }

    /// Characteristics whose specification forbids some values the fuzz loop produces.
    static func validates(_ characteristic: UInt16) -> Bool {
        [GATTCharacteristic.batteryLevel, GATTCharacteristic.recordAccessControlPoint].contains(characteristic)
    }

    /// Why a forbidden value must be refused (battery above 100 %, an op code that is no RACP
    /// response), with the offset and raw value of that field; nil when the value is allowed.
    static func forbidden(_ characteristic: UInt16, _ bytes: [UInt8]) -> (offset: Int, value: Int)? {
        switch characteristic {
        case GATTCharacteristic.batteryLevel: bytes.first.flatMap { $0 > 100 ? (0, Int($0)) : nil }
        case GATTCharacteristic.recordAccessControlPoint:
            bytes.count >= 2 && ![0x05, 0x06].contains(bytes[0]) ? (0, Int(bytes[0])) : nil
        default: nil
        }
    }

    static func checkRejected(_ error: ProfileDecodeError, _ characteristic: UInt16, _ bytes: [UInt8], _ required: Int?) -> String? {
        guard error.characteristic == characteristic else { return "error names \(error.characteristic)" }
        guard let required else { return "a Device Information string was rejected: \(error)" }
        switch error.reason {
        case .truncated(_, let needed, let available):
            // Cut: the missing field starts where the error says and ends within the layout.
            if bytes.count >= required, forbidden(characteristic, bytes) == nil { return "long enough (\(required)) but \(error)" }
            if error.offset < 0 || error.offset + available != bytes.count || needed <= available || error.offset + needed > required {
                return "\(error) does not point at the end of the \(bytes.count) bytes (layout needs \(required))"
            }
        case .invalidValue(_, let value):
            guard let bad = forbidden(characteristic, bytes) else { return "an allowed value was rejected: \(error)" }
            if error.offset != bad.offset || value != bad.value { return "\(error), expected the value \(bad.value) at byte \(bad.offset)" }
        }
        return nil
    }

    static func checkDecoded(_ reading: GATTReading?, _ characteristic: UInt16, _ bytes: [UInt8], _ required: Int?) -> String? {
        guard let reading else { return "no reading" }
        guard let required else {
            // Device Information: the text up to 512 bytes, trailing NULs trimmed, UTF-8.
            guard case .deviceInformation(let c, let text) = reading, c == characteristic else { return "\(reading)" }
            var kept = Array(bytes.prefix(DeviceInformation.maximumStringLength))
            while kept.last == 0 { kept.removeLast() }
            let exact = String(validating: kept, as: UTF8.self)
            let ok = exact.map { $0 == text } ?? (text.unicodeScalars.count <= kept.count)
            return ok ? nil : "text \(text.debugDescription)"
        }
        if bytes.count < required { return "decoded \(bytes.count) bytes where the layout needs \(required): \(reading)" }
        if let bad = forbidden(characteristic, bytes) { return "decoded a forbidden value \(bad.value): \(reading)" }
        let rest = bytes.count - required
        switch reading {
        case .heartRate(let m):
            let hasRR = bytes[0] & 0x10 != 0
            if m.rrIntervalsRaw.count != (hasRR ? rest / 2 : 0) || m.ignoredTrailingBytes != (hasRR ? rest % 2 : rest) {
                return "\(m.rrIntervalsRaw.count) RR intervals, \(m.ignoredTrailingBytes) trailing of \(rest) after the fields"
            }
            let bpm = bytes[0] & 0x01 != 0 ? UInt16(bytes[1]) | UInt16(bytes[2]) << 8 : UInt16(bytes[1])
            if m.beatsPerMinute != bpm { return "heart rate \(m.beatsPerMinute), bytes say \(bpm)" }
            return nil
        case .batteryLevel(let b):
            return b.percent == bytes[0] && b.ignoredTrailingBytes == rest ? nil : "\(b)"
        default:
            guard let trailing = trailingBytes(reading) else { return nil }
            return trailing == rest ? nil : "\(trailing) ignored trailing bytes, \(rest) after the fields"
        }
    }

    /// The decoded value's count of ignored trailing bytes, for the types that report one.
    static func trailingBytes(_ reading: GATTReading) -> Int? {
        switch reading {
        case .heartRate(let v): v.ignoredTrailingBytes
        case .batteryLevel(let v): v.ignoredTrailingBytes
        case .systemID(let v): v.ignoredTrailingBytes
        case .pnpID(let v): v.ignoredTrailingBytes
        case .csc(let v): v.ignoredTrailingBytes
        case .rsc(let v): v.ignoredTrailingBytes
        case .cyclingPower(let v): v.ignoredTrailingBytes
        case .fitnessMachineFeature(let v): v.ignoredTrailingBytes
        case .treadmill(let v): v.ignoredTrailingBytes
        case .crossTrainer(let v): v.ignoredTrailingBytes
        case .rower(let v): v.ignoredTrailingBytes
        case .indoorBike(let v): v.ignoredTrailingBytes
        case .weight(let v): v.ignoredTrailingBytes
        case .bodyComposition(let v): v.ignoredTrailingBytes
        case .bloodPressure(let v), .intermediateCuffPressure(let v): v.ignoredTrailingBytes
        case .temperature(let v), .intermediateTemperature(let v): v.ignoredTrailingBytes
        case .plxSpotCheck(let v): v.ignoredTrailingBytes
        case .plxContinuous(let v): v.ignoredTrailingBytes
        case .glucose(let v): v.ignoredTrailingBytes
        case .glucoseContext(let v): v.ignoredTrailingBytes
        case .bodySensorLocation, .cscFeature, .cyclingPowerFeature, .weightScaleFeature, .recordAccessControlPoint,
             .deviceInformation:
            nil
        }
    }
}
