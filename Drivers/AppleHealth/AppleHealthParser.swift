import DriverKit
public import Foundation
public import HealthModel
public import XMLStream

/// A pure state machine over the events of an Apple Health `export.xml` (HealthKit Export
/// Version 3 to 14): Records, Correlations and Workouts become HealthGate records as their
/// elements end; sleep samples of one source are joined into sessions; everything else
/// (ActivitySummary, ClinicalRecord, Audiogram, types without a mapping) is counted and skipped.
/// See Drivers/AppleHealth/README.md for the mapping.
///
/// Ids derive from each sample's natural key (type, source, start, end, value, unit), so the same
/// sample read from another export of the same phone has the same id.
public struct AppleHealthParser: XMLEventHandler {
    public let path: String
    /// Records finished so far, in document order (take them with ``takeRecords()``).
    public private(set) var records: [HealthRecord] = []
    /// Workouts whose route is a GPX file in the archive: workout id -> the path in the export
    /// folder (`workout-routes/route_....gpx`, as written in `FileReference`).
    public private(set) var routes: [RecordID: String] = [:]
    /// Elements read but not stored, by type (`HKQuantityTypeIdentifierAppleStandTime`,
    /// `ActivitySummary`, ...), and samples skipped for an unreadable date, value or unit
    /// (`unreadable <type>`).
    public private(set) var skipped: [String: Int] = [:]
    /// Records read and mapped, by HealthKit type.
    public private(set) var read: [String: Int] = [:]

    /// Samples of one source further apart than this start a new sleep session.
    public static let sleepGap: TimeInterval = 2 * 3600

    private var depth = 0
    private var record: Draft?
    private var correlation: Draft?
    private var correlationChildren: [Draft] = []
    private var workout: WorkoutDraft?
    private var inRoute = false
    private var sleep: [String: SleepDraft] = [:]
    private var sleepOrder: [String] = []
    private var rootSeen = false
    /// Provenance already built, by what it is built from: one `Source` (and one copy of its
    /// strings) for every sample of one app, device and UTC offset.
    private var sources: [SourceKey: Source] = [:]
    /// Halves of blood pressure readings read as top-level Records, waiting for the other half:
    /// source, start and end -> systolic and diastolic as far as read.
    private var pressureHalves: [String: PressureHalves] = [:]
    /// Blood pressure readings stored so far (from a pair of Records or a Correlation): a reading
    /// is stored once whichever way it comes.
    private var pressureIDs: Set<RecordID> = []

    /// Meals read from top-level DietaryEnergyConsumed Records, held until the end in case a food
    /// Correlation holds the same sample (it says more: the food, the meal): a meal is stored once.
    private var heldMeals: [RecordID: HabitEvent] = [:]
    /// Meals stored from a food Correlation: their top-level copy, if it comes later, is not stored again.
    private var correlatedMeals: Set<RecordID> = []

    /// Meals held at most (``heldMeals``); past this, a top-level meal is stored at once (and
    /// updated, version 2, if its Correlation comes later).
    public static let maxHeldMeals = 50_000

    /// Unpaired blood pressure halves kept at most (a reading's two Records can be far apart in
    /// the file); past this, a new half is counted in ``skipped`` and not kept.
    public static let maxPressureHalves = 100_000

    public init(path: String = "") { self.path = path }

    /// Takes the records finished so far.
    public mutating func takeRecords() -> [HealthRecord] {
        defer { records = [] }
        return records
    }

    /// Takes the route paths of the workouts taken so far.
    public mutating func takeRoutes() -> [RecordID: String] {
        defer { routes = [:] }
        return routes
    }

    /// Ends the document: closes the sleep sessions still open, stores the blood pressure
    /// readings that had a systolic Record without its diastolic.
    public mutating func finish() {
        for key in sleepOrder { if let draft = sleep[key] { records.append(.sleep(draft.closed)) } }
        sleep = [:]
        sleepOrder = []
        for key in pressureHalves.keys.sorted() {
            guard let halves = pressureHalves[key] else { continue }
            if halves.systolic != nil { storePressure(halves) } else { skipped["unpaired HKQuantityTypeIdentifierBloodPressureDiastolic", default: 0] += 1 }
        }
        pressureHalves = [:]
        for meal in heldMeals.values.sorted(by: { ($0.time, $0.id) < ($1.time, $1.id) }) {
            records.append(.habit(meal))
        }
        heldMeals = [:]
    }

    // MARK: Events

    public mutating func handle(_ event: XMLEvent, at location: XMLLocation) throws {
        switch event {
        case .startElement(let name, let attributes):
            depth += 1
            try start(name.local, attributes, at: location)
        case .endElement(let name):
            end(name.local)
            depth -= 1
        case .text:
            break
        }
    }

    private mutating func start(_ name: String, _ attributes: [XMLAttribute], at location: XMLLocation) throws {
        switch depth {
        case 1:
            guard name == "HealthData" else {
                throw DecodeError(file: path, at: .line(location.line, column: location.column),
                                  "the root element is <\(name.prefix(40))>, not <HealthData>: not an Apple Health export")
            }
            rootSeen = true
        case 2:
            switch name {
            case "Record": record = Draft(attributes)
            case "Correlation":
                correlation = Draft(attributes)
                correlationChildren = []
            case "Workout": workout = WorkoutDraft(Draft(attributes))
            case "ExportDate", "Me": break
            default: skipped[name, default: 0] += 1
            }
        default:
            if record != nil, depth == 3, name == "MetadataEntry" {
                record!.metadata(attributes)
            } else if correlation != nil {
                if depth == 3, name == "Record" { correlationChildren.append(Draft(attributes)) }
                if depth == 3, name == "MetadataEntry" { correlation!.metadata(attributes) }
                if depth == 4, name == "MetadataEntry", !correlationChildren.isEmpty {
                    correlationChildren[correlationChildren.count - 1].metadata(attributes)
                }
            } else if workout != nil {
                startInWorkout(name, attributes)
            }
        }
    }

    private mutating func startInWorkout(_ name: String, _ attributes: [XMLAttribute]) {
        switch (depth, name) {
        case (3, "MetadataEntry"): workout!.base.metadata(attributes)
        case (3, "WorkoutStatistics"): workout!.statistics.append(Draft(attributes))
        case (3, "WorkoutEvent"): workout!.events.append(Draft(attributes))
        case (3, "WorkoutRoute"): inRoute = true
        case (4, "FileReference") where inRoute:
            if let path = attributes.value(of: "path") { workout!.routePath = path }
        case (4, "Location") where inRoute:
            let a = Draft(attributes)
            if let time = a.date("date"), let lat = a.number("latitude"), let lon = a.number("longitude"),
                abs(lat) <= 90, abs(lon) <= 180
            {
                let speed = a.number("speed").flatMap { $0 >= 0 ? $0 : nil }
                workout!.locations.append(Sample(time: time, speedMps: speed, latitude: lat, longitude: lon, altitudeM: a.number("altitude")))
            }
        default: break
        }
    }

    private mutating func end(_ name: String) {
        guard depth == 2 else {
            if depth == 3, name == "WorkoutRoute" { inRoute = false }
            return
        }
        switch name {
        case "Record":
            if let draft = record { map(draft) }
            record = nil
        case "Correlation":
            if let draft = correlation { mapCorrelation(draft, children: correlationChildren) }
            correlation = nil
            correlationChildren = []
        case "Workout":
            if let draft = workout { mapWorkout(draft) }
            workout = nil
            inRoute = false
        default: break
        }
    }

    // MARK: Records

    private mutating func unreadable(_ type: String) { skipped["unreadable " + type, default: 0] += 1 }

    private struct SourceKey: Hashable {
        var name: String?, version: String?, device: String?, offset: Substring?
    }

    /// The sample's provenance (see ``Draft/source(_:offset:)``), built once per app, device and
    /// UTC offset of its start.
    private mutating func source(_ d: Draft) -> Source {
        let offset = d.utcOffset("startDate")
        let key = SourceKey(name: d["sourceName"], version: d["sourceVersion"], device: d["device"], offset: offset)
        if let known = sources[key] { return known }
        let made = d.source(path, offset: offset)
        if sources.count >= 10_000 { sources = [:] }
        sources[key] = made
        return made
    }

    /// The record's natural key as id parts: type, source, start and end (epoch seconds), value, unit.
    private func key(_ d: Draft, _ start: Date, _ end: Date) -> [String] {
        [d["type"] ?? "", d["sourceName"] ?? "", String(Int(start.timeIntervalSince1970.rounded())),
         String(Int(end.timeIntervalSince1970.rounded())), d["value"] ?? "", d["unit"] ?? ""]
    }

    private mutating func map(_ d: Draft) {
        let type = d["type"] ?? ""
        guard let start = d.date("startDate"), let end = d.date("endDate") else { return unreadable(type) }
        // Without its prefix (a plain prefix test: Foundation's replacingOccurrences, once per
        // record, was a visible share of the parser's time).
        let short = Self.dropping("HKQuantityTypeIdentifier", from: Self.dropping("HKCategoryTypeIdentifier", from: type))
        let provenance = source(d)
        if let kind = Self.measurementKinds[short] {
            guard let raw = d.number("value"), let value = Self.convert(raw, unit: d["unit"], to: kind) else { return unreadable(type) }
            let interval = end > start
            let id = RecordID.derive(["measurement", AppleHealthImporter.id] + key(d, start, end))
            records.append(.measurement(Measurement(id: id, kind: kind, time: start, end: interval ? end : nil, value: value, source: provenance)))
            read[type, default: 0] += 1
            return
        }
        switch short {
        case "BloodPressureSystolic", "BloodPressureDiastolic":
            // One reading is two Records (also inside a Correlation when the app wrote one):
            // paired by source, start and end; stored once the pair is complete.
            guard let value = d.number("value") else { return unreadable(type) }
            addPressureHalf(d, start: start, end: end, value: value, systolic: short == "BloodPressureSystolic", source: provenance)
            read[type, default: 0] += 1
        case "DietaryWater":
            guard let raw = d.number("value"), let ml = Self.millilitres(raw, unit: d["unit"]) else { return unreadable(type) }
            let id = RecordID.derive(["habit", AppleHealthImporter.id] + key(d, start, end))
            records.append(.habit(HabitEvent(id: id, habit: BuiltInHabit.hydration, time: start, value: (ml * 10).rounded() / 10,
                                             category: "custom", unit: "ml", source: provenance)))
            read[type, default: 0] += 1
        case "DietaryEnergyConsumed":
            guard let raw = d.number("value"), let kcal = Self.kilocalories(raw, unit: d["unit"]) else { return unreadable(type) }
            let event = meal(d, start, end, kcal: kcal, label: d.meta("HKFoodType"), category: d.meta("meal"), version: 1)
            if !correlatedMeals.contains(event.id) {
                if heldMeals.count < Self.maxHeldMeals { heldMeals[event.id] = event } else { records.append(.habit(event)) }
            }
            read[type, default: 0] += 1
        case "MindfulSession":
            let id = RecordID.derive(["habit", AppleHealthImporter.id] + key(d, start, end))
            let minutes = (end.timeIntervalSince(start) / 60 * 10).rounded() / 10
            records.append(.habit(HabitEvent(id: id, habit: "mindfulness", time: start, value: minutes, unit: "min", source: provenance)))
            read[type, default: 0] += 1
        case "SleepAnalysis":
            guard end >= start, let value = d["value"] else { return unreadable(type) }
            addSleep(d, start: start, end: end, value: value, source: provenance)
            read[type, default: 0] += 1
        default:
            skipped[type.isEmpty ? "Record without a type" : type, default: 0] += 1
        }
    }

    /// A meal from a DietaryEnergyConsumed sample: the same id whether read at the top level
    /// or inside its food Correlation (which says more: version 2, its food name and meal).
    private mutating func meal(_ d: Draft, _ start: Date, _ end: Date, kcal: Double, label: String?, category: String?, version: Int) -> HabitEvent {
        let id = RecordID.derive(["habit", AppleHealthImporter.id] + key(d, start, end))
        return HabitEvent(id: id, version: version, habit: BuiltInHabit.meal, time: start, value: (kcal * 10).rounded() / 10,
                          category: category?.lowercased(), unit: "kcal", label: label, source: source(d))
    }

    private mutating func mapCorrelation(_ d: Draft, children: [Draft]) {
        let type = d["type"] ?? ""
        guard let start = d.date("startDate"), let end = d.date("endDate") else { return unreadable(type) }
        switch type {
        case "HKCorrelationTypeIdentifierBloodPressure":
            let systolic = children.first { $0["type"] == "HKQuantityTypeIdentifierBloodPressureSystolic" }?.number("value")
            let diastolic = children.first { $0["type"] == "HKQuantityTypeIdentifierBloodPressureDiastolic" }?.number("value")
            guard let systolic else { return unreadable(type) }
            // Its Records, also at the top level, are the same reading: no longer waited for.
            pressureHalves[Self.pressureKey(d["sourceName"] ?? "", start, end)] = nil
            storePressure(PressureHalves(sourceName: d["sourceName"] ?? "", start: start, end: end, source: source(d),
                                         systolic: systolic, diastolic: diastolic))
            read[type, default: 0] += 1
        case "HKCorrelationTypeIdentifierFood":
            let label = d.meta("HKFoodType") ?? children.lazy.compactMap { $0.meta("HKFoodType") }.first
            let category = d.meta("meal") ?? d.meta("Meal")
            if let energy = children.first(where: { $0["type"] == "HKQuantityTypeIdentifierDietaryEnergyConsumed" }),
                let childStart = energy.date("startDate"), let childEnd = energy.date("endDate"), let raw = energy.number("value"),
                let kcal = Self.kilocalories(raw, unit: energy["unit"])
            {
                // Version 2: stores written before meals were held have the top-level copy as version 1.
                let event = meal(energy, childStart, childEnd, kcal: kcal, label: label, category: category, version: 2)
                heldMeals[event.id] = nil
                if correlatedMeals.insert(event.id).inserted { records.append(.habit(event)) }
            } else {
                let id = RecordID.derive(["habit", AppleHealthImporter.id] + key(d, start, end))
                records.append(.habit(HabitEvent(id: id, habit: BuiltInHabit.meal, time: start, category: category?.lowercased(),
                                                 unit: "kcal", label: label, source: source(d))))
            }
            read[type, default: 0] += 1
        default:
            skipped[type.isEmpty ? "Correlation without a type" : type, default: 0] += 1
        }
    }

    // MARK: Blood pressure

    struct PressureHalves {
        var sourceName: String
        var start: Date
        var end: Date
        var source: Source
        var systolic: Double?
        var diastolic: Double?
    }

    private static func pressureKey(_ sourceName: String, _ start: Date, _ end: Date) -> String {
        "\(sourceName)\u{1F}\(Int(start.timeIntervalSince1970.rounded()))\u{1F}\(Int(end.timeIntervalSince1970.rounded()))"
    }

    private mutating func addPressureHalf(_ d: Draft, start: Date, end: Date, value: Double, systolic: Bool, source: Source) {
        let owner = d["sourceName"] ?? ""
        let key = Self.pressureKey(owner, start, end)
        var halves = pressureHalves[key] ?? PressureHalves(sourceName: owner, start: start, end: end, source: source)
        if systolic { halves.systolic = value } else { halves.diastolic = value }
        if halves.systolic != nil, halves.diastolic != nil {
            pressureHalves[key] = nil
            storePressure(halves)
        } else if pressureHalves[key] != nil || pressureHalves.count < Self.maxPressureHalves {
            pressureHalves[key] = halves
        } else {
            skipped["unpaired " + (d["type"] ?? ""), default: 0] += 1
        }
    }

    /// One blood pressure reading, with the id its Correlation gives it (type, source, start, end,
    /// `systolic/diastolic`): stored once whether read from its Correlation, its two Records or both.
    private mutating func storePressure(_ p: PressureHalves) {
        guard let systolic = p.systolic else { return }
        let key = ["HKCorrelationTypeIdentifierBloodPressure", p.sourceName, String(Int(p.start.timeIntervalSince1970.rounded())),
                   String(Int(p.end.timeIntervalSince1970.rounded())), "\(systolic)/\(p.diastolic.map { "\($0)" } ?? "")", ""]
        let id = RecordID.derive(["measurement", AppleHealthImporter.id] + key)
        guard pressureIDs.insert(id).inserted else { return }
        records.append(.measurement(Measurement(id: id, kind: .bloodPressure, time: p.start, value: systolic,
                                                extra: p.diastolic.map { ["diastolic": $0] } ?? [:], source: p.source)))
    }

    // MARK: Sleep

    private struct SleepDraft {
        var session: SleepSession
        /// The InBed samples' spans, in start order.
        var inBed: [SleepStageSpan] = []

        /// The session as stored. One with InBed samples only (the iPhone's bedtime, no sleep
        /// tracking) gets an `unknown` stage over each stretch in bed (overlapping samples
        /// joined): the model has no in-bed stage; a session's span is the time in bed, its
        /// stages the sleep known in it. Version 2: such sessions were stored without stages before.
        var closed: SleepSession {
            guard session.stages.isEmpty, !inBed.isEmpty else { return session }
            var session = session
            for span in inBed {
                if let last = session.stages.last, span.start <= last.end {
                    session.stages[session.stages.count - 1].end = max(last.end, span.end)
                } else {
                    session.stages.append(SleepStageSpan(start: span.start, end: span.end, stage: .unknown))
                }
            }
            session.version = 2
            return session
        }
    }

    private mutating func addSleep(_ d: Draft, start: Date, end: Date, value: String, source: Source) {
        let stage: SleepStage?
        switch Self.dropping("HKCategoryValueSleepAnalysis", from: value) {
        case "InBed", "0": stage = nil
        case "Asleep", "AsleepUnspecified", "1": stage = .unknown
        case "Awake", "2": stage = .awake
        case "AsleepCore", "3": stage = .light
        case "AsleepDeep", "4": stage = .deep
        case "AsleepREM", "5": stage = .rem
        default: return unreadable(d["type"] ?? "")
        }
        let owner = d["sourceName"] ?? ""
        if var open = sleep[owner] {
            if start <= open.session.end.addingTimeInterval(Self.sleepGap), end >= open.session.start.addingTimeInterval(-Self.sleepGap) {
                open.session.start = min(open.session.start, start)
                open.session.end = max(open.session.end, end)
                if let stage {
                    insert(SleepStageSpan(start: start, end: end, stage: stage), into: &open.session.stages)
                } else if open.session.stages.isEmpty {
                    insert(SleepStageSpan(start: start, end: end, stage: .unknown), into: &open.inBed)
                }
                sleep[owner] = open
                return
            }
            records.append(.sleep(open.closed))
            sleepOrder.removeAll { $0 == owner }
        }
        // The session's id: its source and its first sample's start (a night seen in a newer
        // export starts with the same sample).
        let id = RecordID.derive("sleep", AppleHealthImporter.id, owner, String(Int(start.timeIntervalSince1970.rounded())))
        let stages = stage.map { [SleepStageSpan(start: start, end: end, stage: $0)] } ?? []
        sleep[owner] = SleepDraft(session: SleepSession(id: id, start: start, end: end, stages: stages, source: source),
                                  inBed: stage == nil ? [SleepStageSpan(start: start, end: end, stage: .unknown)] : [])
        sleepOrder.append(owner)
    }

    /// Inserts `span` in start order (samples usually come in order: appended).
    private func insert(_ span: SleepStageSpan, into stages: inout [SleepStageSpan]) {
        var index = stages.count
        while index > 0, stages[index - 1].start > span.start { index -= 1 }
        stages.insert(span, at: index)
    }

    // MARK: Workouts

    private struct WorkoutDraft {
        var base: Draft
        var statistics: [Draft] = []
        var events: [Draft] = []
        var routePath: String?
        var locations: [Sample] = []
        init(_ base: Draft) { self.base = base }
    }

    private mutating func mapWorkout(_ w: WorkoutDraft) {
        let d = w.base
        let type = d["workoutActivityType"] ?? ""
        guard let start = d.date("startDate"), let end = d.date("endDate"), end >= start else { return unreadable("Workout") }
        let activity = Self.snakeCase(type.replacingOccurrences(of: "HKWorkoutActivityType", with: ""))
        let sport = Sport.normalize(activity)
        let subSport = activity.isEmpty || activity == sport.rawValue ? nil : activity

        var distance = d.number("totalDistance").flatMap { Self.metres($0, unit: d["totalDistanceUnit"]) }
        var energy = d.number("totalEnergyBurned").flatMap { Self.kilocalories($0, unit: d["totalEnergyBurnedUnit"]) }
        var avgHR: Int?, maxHR: Int?
        // Since iOS 16 the totals are in WorkoutStatistics.
        for s in w.statistics {
            let statType = (s["type"] ?? "").replacingOccurrences(of: "HKQuantityTypeIdentifier", with: "")
            switch statType {
            case "ActiveEnergyBurned": if energy == nil { energy = s.number("sum").flatMap { Self.kilocalories($0, unit: s["unit"]) } }
            case "DistanceWalkingRunning", "DistanceCycling", "DistanceSwimming", "DistanceDownhillSnowSports", "DistanceWheelchair":
                if distance == nil { distance = s.number("sum").flatMap { Self.metres($0, unit: s["unit"]) } }
            case "HeartRate":
                avgHR = s.number("average").map { Int($0.rounded()) }
                maxHR = s.number("maximum").map { Int($0.rounded()) }
            default: break
            }
        }
        // Active time: `duration` excludes pauses; without it, the pauses the events show are taken out.
        var timer = d.number("duration").flatMap { Self.seconds($0, unit: d["durationUnit"]) }
        if timer == nil, !w.events.isEmpty {
            var paused = 0.0
            var pausedAt: Date?
            for e in w.events.sorted(by: { ($0.date("date") ?? .distantPast) < ($1.date("date") ?? .distantPast) }) {
                guard let at = e.date("date") else { continue }
                switch e["type"] {
                case "HKWorkoutEventTypePause", "HKWorkoutEventTypeMotionPaused": if pausedAt == nil { pausedAt = at }
                case "HKWorkoutEventTypeResume", "HKWorkoutEventTypeMotionResumed":
                    if let p = pausedAt { paused += max(0, at.timeIntervalSince(p)) }
                    pausedAt = nil
                default: break
                }
            }
            if let p = pausedAt { paused += max(0, end.timeIntervalSince(p)) }
            timer = max(0, end.timeIntervalSince(start) - paused)
        }
        let id = RecordID.derive("workout", AppleHealthImporter.id, d["sourceName"] ?? "", String(Int(start.timeIntervalSince1970.rounded())),
                                 String(Int(end.timeIntervalSince1970.rounded())), type)
        let samples = w.locations.sorted { $0.time < $1.time }
        records.append(.workout(Workout(id: id, sport: sport.rawValue, subSport: subSport, start: start, end: end, timerS: timer,
                                        distanceM: distance, energyKcal: energy, avgHeartRate: avgHR, maxHeartRate: maxHR, samples: samples,
                                        source: source(d))))
        if let route = w.routePath, samples.isEmpty { routes[id] = route }
        read["Workout", default: 0] += 1
    }

    // MARK: Units

    static let measurementKinds: [String: MeasurementKind] = [
        "HeartRate": .heartRate, "RestingHeartRate": .restingHeartRate, "HeartRateVariabilitySDNN": .hrv,
        "StepCount": .steps, "DistanceWalkingRunning": .distance, "ActiveEnergyBurned": .energy,
        "BasalEnergyBurned": .basalEnergy, "BodyMass": .weight, "BodyFatPercentage": .bodyFat, "BodyMassIndex": .bmi,
        "OxygenSaturation": .spo2, "RespiratoryRate": .respiratoryRate, "BodyTemperature": .temperature,
        "BloodGlucose": .glucose,
    ]

    /// `value` in `unit` (as HealthKit writes it) in `kind`'s unit; nil for a unit not known.
    static func convert(_ value: Double, unit: String?, to kind: MeasurementKind) -> Double? {
        let unit = unit ?? ""
        switch kind {
        case .heartRate, .restingHeartRate, .respiratoryRate: return unit == "count/min" || unit == "count/s" ? (unit == "count/s" ? value * 60 : value) : nil
        case .hrv: return unit == "ms" ? value : unit == "s" ? value * 1000 : nil
        case .steps: return unit == "count" ? value : nil
        case .distance: return metres(value, unit: unit)
        case .energy, .basalEnergy: return kilocalories(value, unit: unit)
        case .weight:
            switch unit {
            case "kg": return value
            case "lb": return value * 0.453_592_37
            case "g": return value / 1000
            case "st": return value * 6.350_293_18
            default: return nil
            }
        // HealthKit's percent unit holds a fraction (0.97 for 97 %).
        case .bodyFat, .spo2: return unit == "%" ? value * 100 : nil
        case .bmi: return unit == "count" ? value : nil
        case .temperature: return unit == "degC" ? value : unit == "degF" ? (value - 32) * 5 / 9 : nil
        case .glucose:
            if unit == "mg/dL" { return value / 18.015_588 }
            return unit.hasPrefix("mmol") && unit.hasSuffix("/L") ? value : nil
        default: return nil
        }
    }

    static func metres(_ value: Double, unit: String?) -> Double? {
        switch unit ?? "" {
        case "m": value
        case "km": value * 1000
        case "mi": value * 1609.344
        case "yd": value * 0.9144
        case "ft": value * 0.3048
        case "cm": value / 100
        default: nil
        }
    }

    static func kilocalories(_ value: Double, unit: String?) -> Double? {
        switch unit ?? "" {
        case "kcal", "Cal": value
        case "kJ": value / 4.184
        case "cal": value / 1000
        default: nil
        }
    }

    static func millilitres(_ value: Double, unit: String?) -> Double? {
        switch unit ?? "" {
        case "mL", "ml": value
        case "L": value * 1000
        case "fl_oz_us": value * 29.573_529_562_5
        case "fl_oz_imp": value * 28.413_062_5
        case "cup_us": value * 236.588_236_5
        default: nil
        }
    }

    static func seconds(_ value: Double, unit: String?) -> Double? {
        switch unit ?? "" {
        case "min": value * 60
        case "s": value
        case "hr": value * 3600
        default: nil
        }
    }

    /// `text` without `prefix` when it starts with it.
    static func dropping(_ prefix: String, from text: String) -> String {
        text.hasPrefix(prefix) ? String(text.utf8.dropFirst(prefix.utf8.count))! : text
    }

    /// `TraditionalStrengthTraining` -> `traditional_strength_training`.
    static func snakeCase(_ name: String) -> String {
        var out = ""
        for (index, c) in name.enumerated() {
            if c.isUppercase, index > 0 { out += "_" }
            out += c.lowercased()
        }
        return out
    }
}

/// One element's attributes (and its MetadataEntry children), as read.
struct Draft {
    /// The element's attributes as read: an element has a handful, so a look-up is a short scan
    /// (the first of repeated names wins), cheaper than hashing every name into a dictionary.
    private let list: [XMLAttribute]
    private var metadataEntries: [String: String] = [:]

    init(_ list: [XMLAttribute]) { self.list = list }

    subscript(_ key: String) -> String? { list.value(of: key) }

    mutating func metadata(_ list: [XMLAttribute]) {
        // Keys that matter only; the first of repeated keys wins.
        guard let key = list.value(of: "key"), let value = list.value(of: "value"), Self.keptKeys.contains(key) else { return }
        if metadataEntries[key] == nil { metadataEntries[key] = value }
    }

    static let keptKeys: Set<String> = ["HKFoodType", "meal", "Meal"]

    func meta(_ key: String) -> String? { metadataEntries[key] }

    func number(_ key: String) -> Double? {
        guard let text = self[key], let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// `yyyy-MM-dd HH:mm:ss ±HHmm` (the space before the offset is HealthKit's).
    func date(_ key: String) -> Date? {
        guard var text = self[key] else { return nil }
        if text.utf8.count == 25, let space = text.lastIndex(of: " ") { text.remove(at: space) }
        return ISO8601.parse(text)
    }

    /// The UTC offset a date was written with (`+0100` in `2024-01-01 10:00:00 +0100`), or nil.
    func utcOffset(_ key: String) -> Substring? {
        guard let text = self[key], text.utf8.count == 25 else { return nil }
        let offset = text.suffix(5)
        guard let sign = offset.first, sign == "+" || sign == "-", offset.dropFirst().allSatisfy(\.isASCII), offset.dropFirst().allSatisfy(\.isNumber)
        else { return nil }
        return offset
    }

    /// Provenance: the app or device that wrote the sample, its version, the device's name and
    /// model when the export gives them, and the UTC offset its start was written with
    /// (`Simon’s Apple Watch 10.1 (Apple Watch Watch6,7), UTC+01:00`): the model stores instants,
    /// so the offset of the local time the phone showed is kept here.
    func source(_ path: String, offset: Substring? = nil) -> Source {
        var device = self["sourceName"] ?? "unknown source"
        if let version = self["sourceVersion"], !version.isEmpty { device += " " + version }
        if let text = self["device"] {
            // `<<HKDevice: 0x...>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2>`:
            // fields are separated by a comma and a space (a model such as `Watch6,7` has a bare comma).
            let fields = Dictionary(text.components(separatedBy: ", ").compactMap { field -> (String, String)? in
                let parts = field.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { return nil }
                return (parts[0].trimmingCharacters(in: .whitespaces), parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ">")))
            }, uniquingKeysWith: { first, _ in first })
            let about = [fields["name"], fields["hardware"]].compactMap { $0 }.joined(separator: " ")
            if !about.isEmpty { device += " (" + about + ")" }
        }
        device = String(device.prefix(200))
        if let offset { device += ", UTC\(offset.prefix(3)):\(offset.suffix(2))" }
        return Source(driver: AppleHealthImporter.id, device: device, file: path)
    }
}
