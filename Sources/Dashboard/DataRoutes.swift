import Foundation
import HealthModel
import HealthReports
import HealthStore
import Hummingbird

/// The read-only pages of recorded data: workouts, sleep, body, stats, each with its CSV.
extension DashboardServer {
    static func addDataRoutes(to router: Router<DashboardContext>, store: HealthStore, timeZone: TimeZone,
                              now: @escaping @Sendable () -> Date) {
        router.get("/workouts") { request, _ -> Response in
            let (list, days, sports, sport, range, boundary) = try await workouts(store, request, timeZone: timeZone, now: now())
            return html(Pages.workouts(list, days: days, sports: sports, sport: sport, range: range, boundary: boundary))
        }
        router.get("/workouts.csv") { request, _ -> Response in
            let (list, _, _, _, range, _) = try await workouts(store, request, timeZone: timeZone, now: now())
            return csv(Pages.workoutsCSV(list), name: "workouts-\(range)-days.csv")
        }
        router.get("/workout") { request, _ -> Response in
            let workout = try await workout(store, request)
            let boundary = try await Reports.preferences(store).days(in: timeZone)
            let colour = request.uri.queryParameters["colour"].map(String.init)
            let figures = WorkoutFigures.compute(workout, maxHeartRate: try await maxHeartRate(store, now: now()), colour: colour)
            return html(Pages.workout(figures, boundary: boundary))
        }
        router.get("/workout.csv") { request, _ -> Response in
            let workout = try await workout(store, request)
            return csv(Pages.workoutCSV(workout), name: "workout-\(workout.id).csv")
        }
        router.get("/sleep") { request, _ -> Response in
            let (nights, days, range, boundary) = try await sleep(store, request, timeZone: timeZone, now: now())
            return html(Pages.sleep(nights, days: days, range: range, boundary: boundary))
        }
        router.get("/sleep.csv") { request, _ -> Response in
            let (nights, days, range, _) = try await sleep(store, request, timeZone: timeZone, now: now())
            return csv(Pages.sleepCSV(nights, days: days), name: "sleep-\(range)-nights.csv")
        }
        router.get("/body") { request, _ -> Response in
            let (weight, others, preferences, range, since) = try await body(store, request, timeZone: timeZone, now: now())
            var goal: Double?
            if case .profile(let profile)? = try await store.definition(.profile, name: "profile")?.body, let kg = profile.goalWeightKg {
                goal = (Quantities.mass(kg, in: preferences.mass) * 10).rounded() / 10
            }
            return html(Pages.body(weight: weight, others: others, goal: goal, units: preferences, range: range, since: since, now: now(),
                                   boundary: preferences.days(in: timeZone)))
        }
        router.get("/body.csv") { request, _ -> Response in
            let (weight, others, preferences, range, _) = try await body(store, request, timeZone: timeZone, now: now())
            return csv(Pages.bodyCSV([weight] + others, units: preferences), name: "body-\(range)-days.csv")
        }
        router.get("/timeline") { request, _ -> Response in
            let preferences = try await Reports.preferences(store)
            let boundary = preferences.days(in: timeZone)
            let today = boundary.day(of: now())
            var last = today, count = 1
            if let text = request.uri.queryParameters["day"] {
                guard let day = LocalDay(String(text)) else { throw HTTPError(.badRequest, message: "day must be YYYY-MM-DD") }
                last = day
            }
            if let text = request.uri.queryParameters["days"] {
                guard let n = Int(String(text)), [1, 7].contains(n) else { throw HTTPError(.badRequest, message: "days must be 1 or 7") }
                count = n
            }
            var days: [Timeline] = []
            for day in (0..<count).map({ last.adding($0 - count + 1) }) {
                let (start, end) = (boundary.start(of: day), boundary.start(of: day.adding(1)))
                // What overlaps the day: nights and workouts that began up to a day before it.
                let around = DateRange(since: start.addingTimeInterval(-86400), until: end)
                days.append(Timeline.compute(day: day, start: start, end: end, nights: try await store.sleepSessions(in: around),
                                             workouts: try await store.workouts(in: around),
                                             events: try await store.habitEvents(in: DateRange(since: start, until: end)),
                                             boundary: boundary, units: preferences))
            }
            return html(Pages.timeline(days, last: last, today: today, count: count))
        }
        router.get("/stats") { request, _ -> Response in
            let (stats, periods, period, preferences) = try await stats(store, request, timeZone: timeZone, now: now())
            return html(Pages.stats(stats, periods: periods, period: period, units: preferences))
        }
        router.get("/stats.csv") { request, _ -> Response in
            let (stats, _, period, _) = try await stats(store, request, timeZone: timeZone, now: now())
            return csv(Pages.statsCSV(stats), name: "stats-by-\(period.rawValue).csv")
        }
    }

    /// The last `range` local days up to today, oldest first, and the instant the first starts.
    static func lastDays(_ range: Int, _ boundary: DayBoundary, now: Date) -> (days: [LocalDay], since: Date) {
        let today = boundary.day(of: now)
        let days = (0..<range).map { today.adding($0 - range + 1) }
        return (days, boundary.start(of: days[0]))
    }

    static func workouts(_ store: HealthStore, _ request: Request, timeZone: TimeZone, now: Date) async throws
        -> ([WorkoutSummary], [DailyBars.Day], [String], String?, Int, DayBoundary) {
        let range = try days(request)
        let boundary = try await Reports.preferences(store).days(in: timeZone)
        let sport = request.uri.queryParameters["sport"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        guard (sport?.count ?? 0) <= 100 else { throw HTTPError(.badRequest, message: "no sport has so long a name") }
        let (days, since) = lastDays(range, boundary, now: now)
        let all = try await store.workouts(in: DateRange(since: since, until: now.addingTimeInterval(0.001)))
        let sports = Set(all.map(\.sport)).sorted()
        let list = all.filter { sport == nil || $0.sport == sport }
        var minutes: [String: Double] = [:]
        for w in list {
            guard let start = ISO8601.parse(w.start) else { continue }
            minutes[boundary.day(of: start).description, default: 0] += w.elapsedS / 60
        }
        let bars = days.map { DailyBars.Day(label: $0.description, value: (minutes[$0.description] ?? 0).rounded()) }
        return (list, bars, sports, sport, range, boundary)
    }

    /// `?id=` a workout's whole id; 400 for anything else, 404 when there is none.
    static func workout(_ store: HealthStore, _ request: Request) async throws -> Workout {
        guard let text = request.uri.queryParameters["id"], let id = RecordID(string: String(text)) else {
            throw HTTPError(.badRequest, message: "name the workout by its id: /workout?id=ID")
        }
        guard let workout = try await store.workout(id: id.description) else {
            throw HTTPError(.notFound, message: "no workout has that id")
        }
        return workout
    }

    /// The highest heart rate of the last year's workouts: the zones' maximum.
    static func maxHeartRate(_ store: HealthStore, now: Date) async throws -> (value: Int, basis: String)? {
        let year = try await store.workouts(in: DateRange(since: now.addingTimeInterval(-365 * 86400), until: now.addingTimeInterval(0.001)))
        return year.compactMap(\.maxHR).max().map { ($0, "the highest heart rate of your workouts in the last year") }
    }

    static func sleep(_ store: HealthStore, _ request: Request, timeZone: TimeZone, now: Date) async throws
        -> ([SleepNight?], [LocalDay], Int, DayBoundary) {
        var range = 30
        if let text = request.uri.queryParameters["nights"] {
            guard let n = Int(String(text)), [30, 90].contains(n) else { throw HTTPError(.badRequest, message: "nights must be 30 or 90") }
            range = n
        }
        let boundary = try await Reports.preferences(store).days(in: timeZone)
        let (days, since) = lastDays(range, boundary, now: now)
        let sessions = try await store.sleepSessions(endingIn: DateRange(since: since, until: now.addingTimeInterval(0.001)))
        return (SleepNight.nights(sessions, days: days, boundary: boundary), days, range, boundary)
    }

    static func body(_ store: HealthStore, _ request: Request, timeZone: TimeZone, now: Date) async throws
        -> (BodySeries, [BodySeries], Preferences, Int, Date) {
        let range = try days(request)
        let preferences = try await Reports.preferences(store)
        let (_, since) = lastDays(range, preferences.days(in: timeZone), now: now)
        let window = DateRange(since: since, until: now.addingTimeInterval(0.001))
        let weight = BodySeries.compute(.weight, try await store.measurements(kind: .weight, in: window),
                                        scale: Quantities.mass(1, in: preferences.mass))
        var others: [BodySeries] = []
        for kind in Pages.bodyKinds {
            let series = BodySeries.compute(kind, try await store.measurements(kind: kind, in: window))
            if !series.points.isEmpty { others.append(series) }
        }
        return (weight, others, preferences, range, since)
    }

    static func stats(_ store: HealthStore, _ request: Request, timeZone: TimeZone, now: Date) async throws
        -> ([PeriodStats], [LocalDay], StatsPeriod, Preferences) {
        var period = StatsPeriod.week
        if let text = request.uri.queryParameters["period"] {
            guard let p = StatsPeriod(rawValue: String(text)) else {
                throw HTTPError(.badRequest, message: "period must be day, week, month or year")
            }
            period = p
        }
        let preferences = try await Reports.preferences(store)
        let boundary = preferences.days(in: timeZone)
        let first = try await store.recordSpan()?.first
        let periods = Pages.statsPeriods(period, today: boundary.day(of: now), firstRecord: first.map(boundary.day(of:)))
        let since = boundary.start(of: periods[0])
        let stats = try await Reports.stats(store, period: period, range: DateRange(since: since, until: now.addingTimeInterval(0.001)),
                                            days: boundary, now: now)
        return (stats, periods, period, preferences)
    }
}
