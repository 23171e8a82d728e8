import Foundation
import FuzzSupport
import HealthModel

/// Derived habits' rules (`DerivedHabit`, docs/derived-habits.md) over records built from the
/// input, in a zone and day start from the input. Besides "never crash", it traps where the rules
/// break their promises: every value is finite and, but for a measurement's mean, not negative
/// and the sum of the day's contributions; a day holds at most its own minutes of heart rate or
/// workouts; the same records in the opposite order give the same values; a run of days computed
/// alone gives what it gives within a longer run; and heart rate reduced to a reading a minute,
/// or steps to a sum per source and slot (as the stores reduce them in SQL), give the same values
/// as every reading.
///
/// Input: a source byte, condition bytes (bpm, sport, minimum minutes, stage, kind), a zone
/// byte, two day-start bytes, then records: a choice byte (workout, night, reading, entry) and its
/// fields, times in minutes or seconds after 2026-03-27 00:00 UTC (about six weeks).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let source = HabitDerivation.Source.allCases[Int(input.byte()) % HabitDerivation.Source.allCases.count]
    let bpmByte = input.byte(), sportByte = input.byte(), minByte = input.byte(), stageByte = input.byte(), kindByte = input.byte()
    let sports = ["running", "Running", "cycling"]
    let kinds: [MeasurementKind] = [.restingHeartRate, .weight, .heartRate, .steps]
    var derivation = HabitDerivation(source: source)
    switch source {
    case .heartRateAbove, .heartRateBelow: derivation.bpm = 30 + Int(bpmByte) % 221
    case .activeMinutes, .workouts:
        derivation.sport = sportByte % 4 == 3 ? nil : sports[Int(sportByte) % 3]
        derivation.minMinutes = minByte == 0 ? nil : Double(minByte)
    case .sleep: derivation.stage = [nil, .light, .deep, .rem][Int(stageByte) % 4]
    case .measurement: derivation.kind = kinds[Int(kindByte) % 2]
    default: break
    }
    precondition(derivation.problem == nil, "a derivation the target builds is refused: \(derivation.problem ?? "")")
    let zones = TimeZone.knownTimeZoneIdentifiers
    let zone = TimeZone(identifier: zones[Int(input.byte()) % zones.count]) ?? TimeZone(identifier: "UTC")!
    let boundary = DayBoundary(timeZone: zone, startMinutes: Int(input.uint16()) % DayBoundary.allowedStart.count)

    let base = 1_774_569_600.0  // 2026-03-27T00:00:00Z
    let sources = [Source(driver: "fit", device: "watch"), Source(driver: "ble", device: "strap"), Source(driver: "manual")]
    var records = DerivationInput()
    var n = 0
    func id() -> RecordID {
        n += 1
        return RecordID.derive("fuzz", String(n))
    }
    while !input.bytes.isEmpty, n < 400 {
        switch input.byte() % 4 {
        case 0:
            let start = Date(timeIntervalSince1970: base + Double(input.uint16()) * 60)
            let end = start.addingTimeInterval(Double(1 + Int(input.uint16()) % 2_000) * 60)
            let sport = sports[Int(input.byte()) % 3], from = sources[Int(input.byte()) % 3]
            let samples = (0..<Int(input.byte()) % 24).map { _ in
                Sample(time: start.addingTimeInterval(Double(input.uint16())), heartRate: Int(input.byte()))
            }
            records.workouts.append(Workout(id: id(), sport: sport, start: start, end: end, samples: samples, source: from))
        case 1:
            let start = Date(timeIntervalSince1970: base + Double(input.uint16()) * 60)
            let end = start.addingTimeInterval(Double(1 + Int(input.uint16()) % 1_000) * 60)
            let from = sources[Int(input.byte()) % 3]
            let stages = (0..<Int(input.byte()) % 4).map { _ in
                let s = start.addingTimeInterval(Double(input.uint16() % 1_000) * 60)
                return SleepStageSpan(start: s, end: min(end, s.addingTimeInterval((1 + Double(input.byte())) * 60)),
                                      stage: SleepStage.allCases[Int(input.byte()) % SleepStage.allCases.count])
            }.filter { $0.start < $0.end }
            records.sleep.append(SleepSession(id: id(), start: start, end: end, stages: stages, source: from))
        case 2:
            let kind = kinds[Int(input.byte()) % kinds.count]
            let time = Date(timeIntervalSince1970: base + Double(input.uint16()) * 30 + Double(input.byte() % 60))
            let value = Double(input.uint16() % 4_000) / (kind == .weight ? 40 : 1)
            records.measurements.append(Measurement(id: id(), kind: kind, time: time, value: value, source: sources[Int(input.byte()) % 3]))
        default:
            let habit = ["hydration", "Hydration", "vaping", "walk"][Int(input.byte()) % 4]
            let time = Date(timeIntervalSince1970: base + Double(input.uint16()) * 60)
            let label = input.byte() % 8 == 0 ? HabitEvent.Mark.all.sorted().first : nil
            records.habitEvents.append(HabitEvent(id: id(), habit: habit, time: time, value: Double(input.uint16() % 1_000), label: label,
                                                  source: sources[Int(input.byte()) % 3]))
        }
    }

    let first = boundary.day(of: Date(timeIntervalSince1970: base - 3 * 86_400))
    let last = boundary.day(of: Date(timeIntervalSince1970: base + 50 * 86_400))
    let values = DerivedHabit.values(derivation, records, boundary: boundary, days: first...last)
    let parts = DerivedHabit.contributions(derivation, records, boundary: boundary, days: first...last)
    func close(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 1e-6 * max(1, abs(a), abs(b)) }
    func same(_ a: [LocalDay: Double], _ b: [LocalDay: Double]) -> Bool {
        Set(a.keys) == Set(b.keys) && a.allSatisfy { close($0.value, b[$0.key]!) }
    }

    var sums: [LocalDay: Double] = [:]
    for p in parts {
        precondition((first...last).contains(p.day), "a contribution outside the days asked for")
        precondition(p.start <= p.end, "a contribution ends before it starts")
        sums[p.day, default: 0] += p.amount
    }
    for (day, value) in values {
        precondition(value.isFinite, "\(source) on \(day): \(value)")
        guard source != .measurement else { continue }
        precondition(value >= 0, "\(source) on \(day): \(value) is negative")
        precondition(close(value, sums[day] ?? 0), "\(source) on \(day): \(value) is not its contributions' \(sums[day] ?? 0)")
        if source == .activeMinutes || source == .heartRateAbove || source == .heartRateBelow {
            let minutes = boundary.start(of: day.adding(1)).timeIntervalSince(boundary.start(of: day)) / 60
            precondition(value <= minutes + 1e-9, "\(source) on \(day): \(value) minutes in a day of \(minutes)")
        }
    }

    // The same records in the opposite order.
    let reversed = DerivationInput(workouts: records.workouts.reversed(), sleep: records.sleep.reversed(),
                                   measurements: records.measurements.reversed(), habitEvents: records.habitEvents.reversed())
    precondition(same(values, DerivedHabit.values(derivation, reversed, boundary: boundary, days: first...last)),
                 "\(source): the order of the records changes the values")

    // A week in the middle, alone.
    let middle = first.adding(10)...first.adding(16)
    precondition(same(values.filter { middle.contains($0.key) }, DerivedHabit.values(derivation, records, boundary: boundary, days: middle)),
                 "\(source): a week computed alone differs")

    // What the stores reduce in SQL gives the same values.
    if source == .heartRateAbove || source == .heartRateBelow {
        let highest = source == .heartRateAbove
        var minutes: [Int: Double] = [:]
        func add(_ time: Date, _ bpm: Double) {
            let m = Int((time.timeIntervalSince1970 / 60).rounded(.down))
            minutes[m] = minutes[m].map { highest ? max($0, bpm) : min($0, bpm) } ?? bpm
        }
        for m in records.measurements where m.kind == .heartRate && m.value > 0 { add(m.time, m.value) }
        let reduced = DerivationInput.heartRate(minutes: minutes.map { ($0.key, $0.value) }, workouts: records.workouts)
        precondition(same(values, DerivedHabit.values(derivation, reduced, boundary: boundary, days: first...last)),
                     "\(source): heart rate reduced to a reading a minute gives other values")
    }
    if source == .steps {
        let slot = DerivedHabit.stepSlotMinutes(boundary)
        var sums: [String: (source: Source, slot: Int, steps: Double)] = [:]
        for m in records.measurements where m.kind == .steps && m.value > 0 {
            let s = Int(m.time.timeIntervalSince1970) / (slot * 60) * slot
            let key = "\(DerivedHabit.sourceName(m.source))|\(s)"
            sums[key, default: (m.source, s, 0)].steps += m.value
        }
        let reduced = DerivationInput.steps(slots: Array(sums.values))
        precondition(same(values, DerivedHabit.values(derivation, reduced, boundary: boundary, days: first...last)),
                     "steps summed per source and slot give other values")
    }
    return 0
}
