import Foundation
import HealthModel
import Hummingbird
import SyncProtocol

/// Totals per day, week, month or year of the user's days.
struct SummaryRoutes {
    let deps: ServerDependencies

    func add(to group: RouterGroup<ServerContext>) {
        group.get("summaries", use: summaries)
    }

    /// `GET /v1/summaries?period=day|week|month|year[&since=YYYY-MM-DD][&until=YYYY-MM-DD][&tz=ZONE][&day_start=HH:MM]`:
    /// records are counted in the period of their start (a sleep session in that of its end) by
    /// the one day rule (docs/days.md): days in `tz` (UTC unless asked) starting at `day_start`
    /// (the user's synced preference unless asked), weeks from Monday; only days from `since`
    /// to `until`, both included. Each derived habit's values are summed per period too.
    @Sendable func summaries(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let query = Query(request)
        guard let periodText = query.string("period") else {
            throw APIError.badRequest("query parameter period is required: day, week, month or year")
        }
        guard let period = StatsPeriod(rawValue: periodText) else {
            throw APIError.badRequest("period must be day, week, month or year, not '\(periodText)'")
        }
        let since = try day(query, "since")
        let until = try day(query, "until")
        if let since, let until, since > until {
            throw APIError.badRequest("since (\(since)) is after until (\(until))")
        }
        var zone = TimeZone(identifier: "UTC")!, zoneName = "UTC"
        if let name = query.string("tz") {
            // Names only (Europe/Berlin, UTC): an offset such as +02:00 has no clock changes.
            guard name.contains("/") || name == "UTC", let named = TimeZone(identifier: name) else {
                throw APIError.badRequest("tz must be a time zone name such as Europe/Berlin or UTC, not '\(name)'")
            }
            (zone, zoneName) = (named, name)
        }
        var dayStart: Int?
        if let text = query.string("day_start") {
            guard let minutes = DayBoundary.minutes(text) else {
                throw APIError.badRequest("day_start must be HH:MM from 00:00 to 11:59, not '\(text)'")
            }
            dayStart = minutes
        }
        let scope = try await deps.store.summaryScope(userId: principal.userId)
        let days = DayBoundary(timeZone: zone, startMinutes: dayStart ?? scope.dayStartMinutes)
        var buckets: [SummaryResponse.Bucket] = []
        if let span = scope.span {
            let periods: SummaryPeriods
            do {
                periods = try SummaryPeriods(period: period, days: days, span: span, since: since, until: until)
            } catch {
                throw APIError.badRequest("more than \(SummaryPeriods.limit) periods: narrow since and until, or take a longer period")
            }
            buckets = try await deps.store.summaries(userId: principal.userId, periods: periods)
            buckets = try await DerivedSummaries(store: deps.store, userId: principal.userId).add(to: buckets, periods: periods, days: days)
        }
        return JSONResponse.make(SummaryResponse(period: period.rawValue, timeZone: zoneName, dayStart: days.startText,
                                                 buckets: buckets))
    }

    private func day(_ query: Query, _ name: String) throws -> LocalDay? {
        guard let text = query.string(name) else { return nil }
        guard let day = LocalDay(text) else { throw APIError.badRequest("\(name) must be a date YYYY-MM-DD, not '\(text)'") }
        return day
    }
}
