import GadgetbridgeDriver
import HealthModel
import Testing
import TestSupport

@Suite("Gadgetbridge: raw kinds, sleep sessions, schema check") struct GadgetbridgeRulesTests {
    @Test func familyFollowsTheDeviceType() {
        #expect(GadgetbridgeFamily.of(typeName: "MIBAND") == .miBand1)
        for name in ["MIBAND2", "MIBAND3", "AMAZFITBIP", "AMAZFITGTS2", "UNKNOWN"] {
            #expect(GadgetbridgeFamily.of(typeName: name) == .huami, "\(name)")
        }
    }

    @Test func miBand1Codes() {
        var decoder = RawKindDecoder(family: .miBand1)
        #expect([4, 5, 3, 6, -1, 0, 9, 11].map { decoder.decode($0) } == [.deep, .light, .awake, .awake, .awake, .awake, .awake, .awake])
    }

    /// Huami codes are masked with 0xF; 0 and 10 repeat the previous kind; before any kind they
    /// are awake.
    @Test func huamiCodesMaskAndCarry() {
        var decoder = RawKindDecoder(family: .huami)
        let raw = [0, 10, 9, 0, 10, 11, 0, 0x19, 10, 12, 0, 0x2B, 1, 10, 2, 3, 4, 6]
        let expected: [MinuteKind] = [.awake, .awake, .light, .light, .light, .deep, .deep, .light, .light, .awake, .awake, .deep,
                                      .awake, .awake, .awake, .awake, .awake, .awake]
        #expect(raw.map { decoder.decode($0) } == expected)
    }

    @Test func activityKindsBecomeSports() {
        #expect(GadgetbridgeActivityKind.sport(0x10) == ("running", nil))
        #expect(GadgetbridgeActivityKind.sport(0x20) == ("walking", nil))
        #expect(GadgetbridgeActivityKind.sport(0x80) == ("cycling", nil))
        #expect(GadgetbridgeActivityKind.sport(0x100) == ("running", "treadmill"))
        #expect(GadgetbridgeActivityKind.sport(0x400) == ("swimming", "open_water_swimming"))
        #expect(GadgetbridgeActivityKind.sport(0x800) == ("cycling", "indoor_cycling"))
        #expect(GadgetbridgeActivityKind.sport(0x1000) == ("fitness_equipment", "elliptical"))
        #expect(GadgetbridgeActivityKind.sport(0x4000) == ("other", "yoga"))
        #expect(GadgetbridgeActivityKind.sport(0x0400_0005) == ("other", "gadgetbridge_67108869"))
        #expect(GadgetbridgeActivityKind.sport(0) == ("other", "gadgetbridge_0"))
    }

    // MARK: Sleep sessions

    static func minutes(_ spec: [(start: Int64, count: Int, kind: MinuteKind)]) -> [(time: Int64, kind: MinuteKind)] {
        spec.flatMap { part in (0..<part.count).map { (part.start + Int64($0) * 60, part.kind) } }
    }

    @Test func aNightWithAnAwakeSpellAndAGap() {
        let m: Int64 = 60
        let minutes = Self.minutes([(0, 10, .awake), (10 * m, 30, .light), (40 * m, 20, .deep), (60 * m, 5, .awake),
                                    (65 * m, 10, .light), (75 * m + 120 * m, 3, .deep)])
        let sessions = SleepSessionizer.sessions(minutes)
        #expect(sessions == [DerivedSleep(start: 10 * m, end: 198 * m, stages: [
            StageRun(start: 10 * m, end: 40 * m, stage: .light), StageRun(start: 40 * m, end: 60 * m, stage: .deep),
            StageRun(start: 60 * m, end: 65 * m, stage: .awake), StageRun(start: 65 * m, end: 75 * m, stage: .light),
            StageRun(start: 75 * m, end: 195 * m, stage: .awake), StageRun(start: 195 * m, end: 198 * m, stage: .deep),
        ])])
    }

    /// Exactly two hours between two sleep minutes keeps one session; a second more splits it.
    @Test func theTwoHourRule() {
        let joined = SleepSessionizer.sessions([(0, .light), (60, .light), (120 + 7200, .light), (120 + 7260, .light), (120 + 7320, .deep)])
        #expect(joined.map(\.end) == [7500])
        #expect(joined.first?.stages.map(\.stage) == [.light, .awake, .light, .deep])
        let split = SleepSessionizer.sessions(Self.minutes([(0, 5, .light), (300 + 7201, 5, .deep)]))
        #expect(split.map(\.start) == [0, 300 + 7201])
    }

    /// A session needs five minutes of sleep: four are dropped, five kept; awake time inside
    /// does not count.
    @Test func theMinimumLength() {
        #expect(SleepSessionizer.sessions(Self.minutes([(0, 4, .light)])).isEmpty)
        #expect(SleepSessionizer.sessions(Self.minutes([(0, 2, .light), (120, 60, .awake), (3720, 2, .deep)])).isEmpty)
        #expect(SleepSessionizer.sessions(Self.minutes([(0, 5, .deep)])).map(\.asleepS) == [300])
    }

    @Test func noSleepNoSession() {
        #expect(SleepSessionizer.sessions(Self.minutes([(0, 600, .awake)])).isEmpty)
        #expect(SleepSessionizer.sessions([]).isEmpty)
    }

    /// A plain reference: group the sleep minutes by the gap rule, then fill each group's span
    /// minute by minute (sleep minutes by their stage, every other minute awake) and merge runs.
    static func reference(_ minutes: [(time: Int64, kind: MinuteKind)]) -> [DerivedSleep] {
        let sleep = minutes.filter { $0.kind.isSleep }
        var groups: [[(time: Int64, kind: MinuteKind)]] = []
        for minute in sleep {
            if let last = groups.last?.last, minute.time - (last.time + 60) <= 7200 {
                groups[groups.count - 1].append(minute)
            } else {
                groups.append([minute])
            }
        }
        return groups.compactMap { group -> DerivedSleep? in
            guard group.count * 60 >= 300 else { return nil }
            let start = group.first!.time, end = group.last!.time + 60
            let byTime = Dictionary(group.map { ($0.time, $0.kind.stage) }) { a, _ in a }
            var runs: [StageRun] = []
            for t in stride(from: start, to: end, by: 60) {
                let stage = byTime[t] ?? .awake
                if let last = runs.last, last.stage == stage { runs[runs.count - 1].end = t + 60 } else {
                    runs.append(StageRun(start: t, end: t + 60, stage: stage))
                }
            }
            return DerivedSleep(start: start, end: end, stages: runs)
        }
    }

    /// Random minute streams (runs of kinds, gaps from a minute to five hours): the sessionizer
    /// matches the reference, and its sessions are ordered, tiled by their stages without two
    /// adjacent runs of one stage, more than two hours apart, each with five minutes of sleep.
    @Test func randomStreamsMatchTheReference() {
        var random = SeededGenerator(seed: 0x6AD6_E7B1)
        let kinds: [MinuteKind] = [.light, .deep, .awake]
        for round in 0..<300 {
            var minutes: [(time: Int64, kind: MinuteKind)] = []
            var t = Int64.random(in: 0...100_000, using: &random) * 60
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                let kind = kinds.randomElement(using: &random)!
                for _ in 0..<Int.random(in: 1...90, using: &random) {
                    minutes.append((t, kind))
                    t += 60
                }
                if Int.random(in: 0..<4, using: &random) == 0 { t += Int64.random(in: 1...300, using: &random) * 60 }
            }
            let sessions = SleepSessionizer.sessions(minutes)
            #expect(sessions == Self.reference(minutes), "round \(round)")
            for (i, session) in sessions.enumerated() {
                #expect(session.stages.first?.start == session.start && session.stages.last?.end == session.end)
                #expect(session.asleepS >= 300)
                for (a, b) in zip(session.stages, session.stages.dropFirst()) {
                    #expect(a.end == b.start && a.stage != b.stage && a.start < a.end)
                }
                if i > 0 { #expect(session.start - sessions[i - 1].end > 7200) }
            }
        }
    }

    /// Incremental use (what the importer does, page by page) gives what the whole list gives.
    @Test func incrementalEqualsWhole() {
        var random = SeededGenerator(seed: 42)
        let minutes = (0..<5000).map { i -> (time: Int64, kind: MinuteKind) in
            (Int64(i) * 60 + (i > 2500 ? 9000 : 0), [MinuteKind.light, .deep, .awake, .awake].randomElement(using: &random)!)
        }
        var sessionizer = SleepSessionizer()
        var sessions: [DerivedSleep] = []
        for minute in minutes { if let s = sessionizer.add(time: minute.time, kind: minute.kind) { sessions.append(s) } }
        if let s = sessionizer.finish() { sessions.append(s) }
        #expect(sessions == SleepSessionizer.sessions(minutes))
        #expect(sessions.count == 2)
    }

    // MARK: Schema

    static let goodTables: [String: Set<String>] = [
        "DEVICE": ["_ID", "NAME", "IDENTIFIER", "TYPE", "TYPE_NAME"],
        "MI_BAND_ACTIVITY_SAMPLE": ["TIMESTAMP", "DEVICE_ID", "USER_ID", "RAW_INTENSITY", "STEPS", "RAW_KIND", "HEART_RATE"],
        "BASE_ACTIVITY_SUMMARY": ["_ID", "NAME", "START_TIME", "END_TIME", "ACTIVITY_KIND", "DEVICE_ID"],
    ]

    @Test func schemaCheck() {
        #expect(GadgetbridgeSchema.problem(userVersion: 92, tables: Self.goodTables) == nil)
        #expect(GadgetbridgeSchema.problem(userVersion: 60, tables: Self.goodTables) == nil)
        #expect(GadgetbridgeSchema.problem(userVersion: 93, tables: Self.goodTables) == nil)
        #expect(GadgetbridgeSchema.problem(userVersion: 151, tables: Self.goodTables) == nil)
        let newer = GadgetbridgeSchema.problem(userVersion: 152, tables: Self.goodTables)
        #expect(newer?.hasPrefix("Gadgetbridge schema version 152 is newer than the newest checked (151) and lacks what is read: table ") == true)
        let other = GadgetbridgeSchema.problem(userVersion: 3, tables: ["HABITS": [], "REPETITIONS": []])
        #expect(other == "not a Gadgetbridge database: no DEVICE table (its tables: HABITS, REPETITIONS)")
        #expect(GadgetbridgeSchema.problem(userVersion: 0, tables: [:])?.contains("(it has no tables)") == true)
        // Before schema 62 the type is the integer TYPE, and the oldest files lack the workouts:
        // read all the same. A DEVICE table with neither names what it lacks.
        var old = Self.goodTables
        old["DEVICE"]!.remove("TYPE_NAME")
        old["BASE_ACTIVITY_SUMMARY"] = nil
        #expect(GadgetbridgeSchema.problem(userVersion: 14, tables: old) == nil)
        #expect(GadgetbridgeSchema.deviceTypeColumn(old["DEVICE"]!) == "TYPE")
        old["DEVICE"]!.remove("TYPE")
        #expect(GadgetbridgeSchema.problem(userVersion: 14, tables: old)
            == "Gadgetbridge schema version 14 not recognized: DEVICE lacks TYPE_NAME (or TYPE); nothing read")
        // The integer types of the bands read, as Gadgetbridge's own migration names them.
        #expect([10, 11, 12, 14, 16, 20, 37, 1, -1].map { GadgetbridgeSchema.typeName(key: $0) }
            == ["MIBAND", "MIBAND2", "AMAZFITBIP", "MIBAND3", "MIBAND4", "AMAZFITBIPS", "MIBAND6", "UNKNOWN", "UNKNOWN"])
    }
}
