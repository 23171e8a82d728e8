import Foundation
import HealthModel
import HealthReports
import HealthStore
import Testing

/// The views' pure computations (local days, streaks, today, achievements) in non-UTC zones:
/// Berlin changes to summer time on 2026-03-29 (a 23-hour day) and back on 2026-10-25 (25 hours);
/// New York on 2026-03-08 and 2026-11-01.
@Suite struct ViewsTests {
    static let berlin = Calendar.gregorian(in: TimeZone(identifier: "Europe/Berlin")!)
    static let newYork = Calendar.gregorian(in: TimeZone(identifier: "America/New_York")!)
    static let source = Source(driver: "manual")

    /// A wall-clock time in `calendar`'s zone.
    static func local(_ calendar: Calendar, _ y: Int, _ mo: Int, _ d: Int, _ h: Int = 12, _ mi: Int = 0) -> Date {
        calendar.date(from: DateComponents(year: y, month: mo, day: d, hour: h, minute: mi))!
    }

    static func event(_ habit: String, _ time: Date, value: Double? = nil, category: String? = nil) -> HabitEvent {
        HabitEvent(id: RecordID.derive("test", habit, ISO8601.string(time), category ?? ""), habit: habit, time: time, value: value,
                   category: category, source: source)
    }

    static func habit(_ name: String, _ kind: HabitDefinition.ValueKind, target: HabitTarget?, unit: String? = nil,
                      defined: Date) -> Definition {
        Definition(name: name, time: defined, body: .habit(HabitDefinition(valueKind: kind, unit: unit, target: target)), source: source)
    }

    @Test func localDaysAcrossTheDSTChangesOfBerlin() throws {
        let c = Self.berlin
        let days = Periods(.day, calendar: c, from: Self.local(c, 2026, 3, 27), through: Self.local(c, 2026, 3, 31))
        #expect(days.count == 5)
        let hours = (0..<days.count).map { days.bounds[$0 + 1].timeIntervalSince(days.bounds[$0]) / 3600 }
        #expect(hours == [24, 24, 23, 24, 24])
        #expect(ISO8601.string(days.bounds[2]) == "2026-03-28T23:00:00Z")
        #expect(ISO8601.string(days.bounds[3]) == "2026-03-29T22:00:00Z")
        let autumn = Periods(.day, calendar: c, from: Self.local(c, 2026, 10, 24), through: Self.local(c, 2026, 10, 26))
        #expect((0..<autumn.count).map { autumn.bounds[$0 + 1].timeIntervalSince(autumn.bounds[$0]) / 3600 } == [24, 25, 24])
        // A drink at 23:30 Berlin time belongs to that local day (22:30 or 21:30 UTC).
        #expect(days.label(days.index(of: Self.local(c, 2026, 3, 29, 23, 30))!) == "2026-03-29")
        #expect(days.label(days.index(of: Self.local(c, 2026, 3, 28, 23, 30))!) == "2026-03-28")
        #expect(days.label(days.index(of: Self.local(c, 2026, 3, 30, 0, 1))!) == "2026-03-30")
    }

    /// A yes/no habit done every day at 23:30 and 00:30 local across the end of March and the
    /// spring DST change; then the streak is broken and built again across the autumn change.
    @Test(arguments: ["Europe/Berlin", "America/New_York"])
    func streaksAcrossMonthEndsAndDST(zone: String) throws {
        let c = Calendar.gregorian(in: TimeZone(identifier: zone)!)
        let springDay = zone == "Europe/Berlin" ? 29 : 8
        // Days springDay-10 ... April 5 (spring) and October 20 ... November 3 (autumn).
        var events: [HabitEvent] = []
        var day = Self.local(c, 2026, 3, springDay - 10)
        while day < Self.local(c, 2026, 4, 6) {
            let comps = c.dateComponents([.year, .month, .day], from: day)
            let late = Self.local(c, comps.year!, comps.month!, comps.day!, 23, 30)
            events.append(Self.event("stretch", late))
            day = c.date(byAdding: .day, value: 1, to: day)!
        }
        day = Self.local(c, 2026, 10, 20)
        while day < Self.local(c, 2026, 11, 4) {
            let comps = c.dateComponents([.year, .month, .day], from: day)
            events.append(Self.event("stretch", Self.local(c, comps.year!, comps.month!, comps.day!, 0, 30)))
            day = c.date(byAdding: .day, value: 1, to: day)!
        }
        let goal = try #require(HabitGoal(Self.habit("stretch", .yesNo, target: nil, defined: Self.local(c, 2026, 3, 1))))
        func progress(at now: Date) -> HabitProgress {
            let days = Periods(.day, calendar: c, from: Self.local(c, 2026, 3, springDay - 10), through: now)
            return HabitProgress.compute(goal, periods: days, totals: days.totals(of: events.filter { $0.time <= now }),
                                         start: Self.local(c, 2026, 3, springDay - 10, 0, 0), now: now)
        }
        let springRun = 31 - (springDay - 10) + 1 + 5  // March springDay-10 ... 31, April 1 ... 5
        // April 5 at 20:00: today not done yet, the streak still stands (through April 4).
        #expect(progress(at: Self.local(c, 2026, 4, 5, 20)).currentStreak == springRun - 1)
        // At 23:45 it is done.
        let done = progress(at: Self.local(c, 2026, 4, 5, 23, 45))
        #expect(done.currentStreak == springRun && done.longestStreak == springRun)
        // Two days later without entries: broken.
        #expect(progress(at: Self.local(c, 2026, 4, 7, 12)).currentStreak == 0)
        // November 3 at noon: 15 days (October 20 ... November 3) across the autumn change; the
        // spring run is still the longest.
        let autumn = progress(at: Self.local(c, 2026, 11, 3, 12))
        #expect(autumn.currentStreak == 15)
        #expect(autumn.longestStreak == springRun)
        #expect(autumn.met == springRun + 15)
    }

    /// A numeric habit with a weekly at-least target: ISO weeks, Monday first, met by the sum.
    /// A day skipped on purpose is passed over: the streak goes on across it (not longer for it),
    /// the completion leaves it out; a day skipped but done anyway counts as done.
    @Test func aSkippedDayNeitherBreaksNorExtendsAStreak() throws {
        let c = Self.berlin
        let goal = try #require(HabitGoal(Self.habit("stretch", .yesNo, target: nil, defined: Self.local(c, 2026, 3, 1))))
        let now = Self.local(c, 2026, 3, 10, 20)
        let days = Periods(.day, calendar: c, from: Self.local(c, 2026, 3, 1), through: now)
        // Done March 1-9 but the 4th and the 7th, which were skipped; the 8th skipped and done.
        let done = [1, 2, 3, 5, 6, 8, 9].map { Self.event("stretch", Self.local(c, 2026, 3, $0, 8)) }
        let skipped: Set<Int> = [3, 6, 7]  // March 4, 7, 8
        let p = HabitProgress.compute(goal, periods: days, totals: days.totals(of: done), start: Self.local(c, 2026, 3, 1), now: now,
                                      skipped: skipped)
        // March 10 is in progress: 7 days done in a row, the skipped 4th and 7th passed over.
        #expect(p.currentStreak == 7 && p.longestStreak == 7)
        #expect(p.met == 7 && p.counted == 7 && p.completionRate == 1)
        // Without the skips the 4th and the 7th are missed days.
        let plain = HabitProgress.compute(goal, periods: days, totals: days.totals(of: done), start: Self.local(c, 2026, 3, 1), now: now)
        #expect(plain.currentStreak == 2 && plain.longestStreak == 3 && plain.counted == 9)
        // Skipping yesterday and today keeps the streak standing.
        let later = Self.local(c, 2026, 3, 12, 20)
        let more = Periods(.day, calendar: c, from: Self.local(c, 2026, 3, 1), through: later)
        let resting = HabitProgress.compute(goal, periods: more, totals: more.totals(of: done + [Self.event("stretch", Self.local(c, 2026, 3, 10, 8))]),
                                            start: Self.local(c, 2026, 3, 1), now: later, skipped: skipped.union([10, 11]))
        #expect(resting.currentStreak == 8)
        let lapsed = HabitProgress.compute(goal, periods: more, totals: more.totals(of: done + [Self.event("stretch", Self.local(c, 2026, 3, 10, 8))]),
                                           start: Self.local(c, 2026, 3, 1), now: later, skipped: skipped.union([11]))
        #expect(lapsed.currentStreak == 0 && lapsed.longestStreak == 8)
    }

    @Test func weeklyTargetStreak() throws {
        let c = Self.berlin
        let goal = try #require(HabitGoal(Self.habit("reading", .numeric, target: HabitTarget(amount: 100, period: .week),
                                                     unit: "pages", defined: Self.local(c, 2026, 3, 2))))
        // Weeks from Monday March 2: 120 pages, 60 + 50, 90 (missed), 100.
        let events = [Self.event("reading", Self.local(c, 2026, 3, 4), value: 120),
                      Self.event("reading", Self.local(c, 2026, 3, 9), value: 60),
                      Self.event("reading", Self.local(c, 2026, 3, 15, 23, 59), value: 50),
                      Self.event("reading", Self.local(c, 2026, 3, 18), value: 90),
                      Self.event("reading", Self.local(c, 2026, 3, 29, 23, 0), value: 100)]
        let now = Self.local(c, 2026, 3, 30, 9)
        let weeks = Periods(.week, calendar: c, from: Self.local(c, 2026, 3, 2), through: now)
        let p = HabitProgress.compute(goal, periods: weeks, totals: weeks.totals(of: events), start: Self.local(c, 2026, 3, 2), now: now)
        #expect(p.unit == "week")
        #expect(p.longestStreak == 2)
        // Week 14 (from March 30) is in progress and not met: the streak is week 13's.
        #expect(p.currentStreak == 1)
        #expect(p.met == 3 && p.counted == 4)
    }

    /// The hydration goal at midnight: 23:59 counts for the day ending, 00:01 for the new one.
    @Test(arguments: ["Europe/Berlin", "America/New_York"])
    func waterGoalAtMidnight(zone: String) throws {
        let c = Calendar.gregorian(in: TimeZone(identifier: zone)!)
        let goal = Self.habit(BuiltInHabit.hydration, .numeric, target: HabitTarget(amount: 2000), unit: "ml",
                              defined: Self.local(c, 2026, 3, 1))
        let events = [Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, 28, 12), value: 1500),
                      Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, 28, 23, 59), value: 500),
                      Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, 29, 0, 1), value: 330)]
        let before = TodayReport.compute(TodayInput(now: Self.local(c, 2026, 3, 28, 23, 59), days: .midnight(in: c.timeZone), definitions: [goal],
                                                    events: events))
        #expect(before.date == "2026-03-28")
        #expect(before.water.ml == 2000 && before.water.met == true && before.water.progress == 1)
        let after = TodayReport.compute(TodayInput(now: Self.local(c, 2026, 3, 29, 0, 1), days: .midnight(in: c.timeZone), definitions: [goal],
                                                   events: events))
        #expect(after.date == "2026-03-29")
        #expect(after.water.ml == 330 && after.water.met == false && after.water.drinks == 1)
        // In fluid ounces when preferred.
        let prefs = Definition(name: "preferences", time: Self.local(c, 2026, 3, 1), body: .preferences(Preferences(volume: .flOz)),
                               source: Self.source)
        let oz = TodayReport.compute(TodayInput(now: Self.local(c, 2026, 3, 29, 0, 1), days: .midnight(in: c.timeZone), definitions: [goal, prefs],
                                                events: events))
        #expect(oz.water.unit == "fl_oz" && abs(oz.water.amount - 330 / Units.millilitresPerFluidOunce) < 1e-9)
        #expect(abs(oz.water.goal! - 2000 / Units.millilitresPerFluidOunce) < 1e-9)
    }

    /// Vaping: time since the last session, today's count against an at-most goal, and the first
    /// vape-free day (a whole local day: the 23-hour DST day counts once it is over).
    @Test func vapingAndTheFirstVapeFreeDay() throws {
        let c = Self.berlin
        let vapes = [Self.event(BuiltInHabit.vaping, Self.local(c, 2026, 3, 27, 9), value: 1, category: "stress"),
                     Self.event(BuiltInHabit.vaping, Self.local(c, 2026, 3, 28, 23, 30), value: 1, category: "boredom")]
        let limit = Self.habit(BuiltInHabit.vaping, .numeric, target: HabitTarget(amount: 1, direction: .atMost),
                               defined: Self.local(c, 2026, 3, 1))
        let today = TodayReport.compute(TodayInput(now: Self.local(c, 2026, 3, 29, 1, 30), days: .midnight(in: c.timeZone), definitions: [limit],
                                                   events: vapes, lastVape: vapes[1]))
        #expect(today.vaping.sessions == 0 && today.vaping.withinGoal == true && today.vaping.goalAtMost == 1)
        // 23:30 to 01:30, before the clocks go forward at 02:00: two hours.
        #expect(today.vaping.sinceLastS == 7200)

        func achievements(at now: Date) -> [Achievement] {
            let days = Periods(.day, calendar: c, from: vapes[0].time, through: now)
            return Achievements.compute(days: days, now: now, vaping: days.totals(of: vapes), progress: [])
        }
        #expect(achievements(at: Self.local(c, 2026, 3, 29, 23, 59)).isEmpty)
        let earned = achievements(at: Self.local(c, 2026, 3, 30, 0, 1))
        #expect(earned == [Achievement(kind: "first_vape_free_day", habit: "vaping", title: "First vape-free day", earned: "2026-03-29")])
    }

    /// Seven days of the water goal met (the seventh across the DST change) and a habit's thirty.
    @Test func streakAchievements() throws {
        let c = Self.berlin
        let water = Self.habit(BuiltInHabit.hydration, .numeric, target: HabitTarget(amount: 1000), unit: "ml",
                               defined: Self.local(c, 2026, 3, 1))
        var events: [HabitEvent] = []
        for d in 23...29 { events.append(Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, d, 23, 50), value: 1000)) }
        for d in 0..<30 { events.append(Self.event("walk", Self.local(c, 2026, 3, 1, 8).addingTimeInterval(Double(d) * 86_400), value: 1)) }
        let walk = Self.habit("walk", .yesNo, target: nil, defined: Self.local(c, 2026, 3, 1))
        let now = Self.local(c, 2026, 3, 31, 12)
        let days = Periods(.day, calendar: c, from: Self.local(c, 2026, 3, 1), through: now)
        let progress = [water, walk].map { d in
            HabitProgress.compute(HabitGoal(d)!, periods: days, totals: days.totals(of: events.filter { $0.habit == d.name }),
                                  start: d.time, now: now)
        }
        let list = Achievements.compute(days: days, now: now, vaping: [], progress: progress)
        #expect(list.map(\.kind) == ["water_streak_7", "habit_streak_30"])
        #expect(list.map(\.earned) == ["2026-03-29", "2026-03-30"])
        #expect(list[1].habit == "walk")
    }

    /// The store's SQL totals per local day equal the ones computed from the records.
    @Test(arguments: ["Europe/Berlin", "America/New_York"])
    func sqlTotalsMatchTheRecords(zone: String) async throws {
        let c = Calendar.gregorian(in: TimeZone(identifier: zone)!)
        let store = try await HealthStore.inMemory()
        var events: [HabitEvent] = []
        var t = Self.local(c, 2026, 3, 25, 0, 0)
        var i = 0
        // Every 47 minutes across both DST changes of both zones (and whole-second and
        // millisecond times right at local midnights).
        while t < Self.local(c, 2026, 4, 3) {
            events.append(Self.event(BuiltInHabit.hydration, t, value: Double(100 + i % 7)))
            t = t.addingTimeInterval(47 * 60)
            i += 1
        }
        events.append(Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, 30, 0, 0), value: 5))
        events.append(Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, 30, 0, 0).addingTimeInterval(-0.001), value: 7))
        events.append(Self.event(BuiltInHabit.hydration, Self.local(c, 2026, 3, 30, 0, 0).addingTimeInterval(0.5), value: 9))
        try await store.write(events.map { .habit($0) })
        let days = Periods(.day, calendar: c, from: Self.local(c, 2026, 3, 24), through: Self.local(c, 2026, 4, 4))
        let sql = try await store.habitTotals(BuiltInHabit.hydration, bounds: days.bounds)
        #expect(sql == days.totals(of: events))
        #expect(sql.reduce(0) { $0 + $1.count } == events.count)
    }
}
