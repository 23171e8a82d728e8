import Foundation
import Hummingbird
import SyncProtocol

/// Totals per day, week, month or year.
struct SummaryRoutes {
    let deps: ServerDependencies

    func add(to group: RouterGroup<ServerContext>) {
        group.get("summaries", use: summaries)
    }

    /// `GET /v1/summaries?period=day|week|month|year[&since=YYYY-MM-DD][&until=YYYY-MM-DD]`:
    /// records are counted in the period (UTC, weeks from Monday) of their start, if they start
    /// on a day in `[since, until]`.
    @Sendable func summaries(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let query = Query(request)
        guard let periodText = query.string("period") else {
            throw APIError.badRequest("query parameter period is required: day, week, month or year")
        }
        guard let period = SummaryPeriod(rawValue: periodText) else {
            throw APIError.badRequest("period must be day, week, month or year, not '\(periodText)'")
        }
        let since = try day(query, "since")
        let until = try day(query, "until")
        if let since, let until, since > until {
            throw APIError.badRequest("since (\(since)) is after until (\(until))")
        }
        let buckets = try await deps.store.summaries(userId: principal.userId, period: period, since: since, until: until)
        return JSONResponse.make(SummaryResponse(period: period.rawValue, buckets: buckets))
    }

    private func day(_ query: Query, _ name: String) throws -> Day? {
        guard let text = query.string(name) else { return nil }
        guard let day = Day(text) else { throw APIError.badRequest("\(name) must be a date YYYY-MM-DD, not '\(text)'") }
        return day
    }
}
