public import Foundation
import HTTPTypes
public import HealthModel
public import HealthReports
import HealthPipeline
public import HealthStore
public import Hummingbird
import HummingbirdCore
import WebSecurity
import Entries
import ServiceLifecycle
import Synchronization
public import Logging

/// The dashboard's web server: the pages of ``Pages`` over HTTP, read from a store. It listens on
/// loopback only, answers only requests addressed to it by a loopback name (a forged `Host`, as a
/// DNS-rebinding page sends, gets 421), runs only its own one script (`Content-Security-Policy`),
/// and takes a form only with the token of its own pages, from its own origin.
public enum DashboardServer {
    /// The day ranges the water page offers.
    static let ranges = [7, 30, 90, 365]

    /// The application serving `store` on `host:port` (a loopback address); `onListening` gets
    /// its URL once it listens (port 0: the port the kernel chose). `status`: the daemon's own
    /// (drivers, devices, last sync), for the today page; `onStored` hears of the records a form
    /// stored (the daemon counts them and wakes its forwarder).
    /// The application serving `store` where `listen` says: a TCP address, or a Unix socket
    /// (for a reverse proxy; mode 0660, so that the proxy's group may connect).
    public static func application(store: HealthStore, listen: DashboardListen, access: DashboardAccess = DashboardAccess(),
                                   timeZone: TimeZone = .current,
                                   now: @escaping @Sendable () -> Date = { Date() },
                                   status: (@Sendable () async -> DashboardStatus)? = nil,
                                   liveInterval: Duration = .seconds(1),
                                   onStored: @escaping @Sendable (Int) -> Void = { _ in },
                                   onListening: @escaping @Sendable (String) -> Void, logger: Logger) -> some ApplicationProtocol {
        let router = Router(context: DashboardContext.self)
        // Off loopback the password and TLS protect the pages; on loopback, the Host check does
        // (a page elsewhere resolving its name to 127.0.0.1 cannot read them). A Unix socket is
        // reached through a proxy, which forwards its own name and answers for it.
        let unix: Bool
        if case .unix = listen { unix = true } else { unix = false }
        if !access.secured && !unix { router.add(middleware: LoopbackHostMiddleware()) }
        let token = FormToken()
        let notices = Notices()
        let sessions = Sessions(), limit = LoginLimit()
        // Behind a proxy on a Unix socket the browser's scheme is the proxy's: either is this origin.
        let scheme = unix ? "*" : access.tls == nil ? "http" : "https"
        if access.passwordHash != nil { router.add(middleware: SessionMiddleware(sessions: sessions, now: { Date() })) }
        if let hash = access.passwordHash {
            router.get("/login") { request, _ -> Response in
                html(Pages.login(next: safeReturn(request.uri.queryParameters["next"].map(String.init) ?? "/")))
            }
            router.post("/login") { request, context -> Response in
                guard sameOrigin(request, scheme: scheme) else { return refusal(.forbidden, "This form was sent from another site.") }
                let body = try await request.body.collect(upTo: 4096)
                guard let form = try? URLEncodedFormDecoder().decode(LoginForm.self, from: String(buffer: body)) else {
                    return refusal(.badRequest, "This is not a form of the dashboard.")
                }
                let next = safeReturn(form.next ?? "/")
                if let wait = limit.wait(context.peer, now: Date()) {
                    var response = html(Pages.login(next: next, problem: "Too many wrong passwords: try again in \(wait) seconds."))
                    response.status = .tooManyRequests
                    response.headers[.retryAfter] = String(wait)
                    return response
                }
                guard await PasswordHasher.verify(form.password, hash: hash) else {
                    limit.failed(context.peer, now: Date())
                    var response = html(Pages.login(next: next, problem: "That is not the password."))
                    response.status = .unauthorized
                    return response
                }
                limit.succeeded(context.peer)
                let session = sessions.start(now: Date())
                var cookie = "\(Sessions.cookie)=\(session); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(Sessions.lifetime))"
                if access.tls != nil { cookie += "; Secure" }
                return Response(status: .seeOther, headers: [.location: next, .setCookie: cookie, .cacheControl: "no-store"])
            }
            router.post("/logout") { request, _ -> Response in
                switch try await posted(LogoutForm.self, request, token: token, scheme: scheme) {
                case .refused(let refused): return refused
                case .form:
                    sessions.end(request.cookies[Sessions.cookie]?.value)
                    return Response(status: .seeOther, headers: [.location: "/login", .cacheControl: "no-store",
                                                                 .setCookie: "\(Sessions.cookie)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"])
                }
            }
        }
        @Sendable func todayPage(notice: String? = nil, problem: String? = nil) async throws -> String {
            let preferences = try await Reports.preferences(store)
            let report = try await Reports.today(store, days: preferences.days(in: timeZone), now: now())
            let definitions = DefinitionsSnapshot(try await store.definitions())
            let forms = access.readOnly ? nil : Pages.Forms(token: token.value, triggers: definitions.triggers,
                                                            habits: userHabits(definitions.habits.values.map(\.name)))
            let system = try await systemCard(preferences.days(in: timeZone))
            let logout = access.passwordHash == nil ? nil : token.value
            return Pages.today(report, units: preferences, forms: forms, notice: notice, problem: problem, system: system, logout: logout)
        }
        @Sendable func systemCard(_ boundary: DayBoundary) async throws -> String {
            Pages.systemCard(await status?(), outbox: try await store.outboxDepth(), refused: try await store.deadLetterCount(), boundary: boundary)
        }
        // The box's card, live (server-sent events): sent at once, then whenever it changes
        // (looked at every `liveInterval`), with a comment every 15 s to keep proxies from
        // closing a quiet stream. At most 8 streams at once; one more is told to retry in 30 s.
        // A stream ends with the server's graceful shutdown.
        let streams = Mutex(0)
        router.get("/events/status") { _, _ -> Response in
            var headers = securityHeaders
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                guard streams.withLock({ open in open < 8 ? { open += 1; return true }() : false }) else {
                    try await writer.write(ByteBuffer(string: "retry: 30000\n\n"))
                    try await writer.finish(nil)
                    return
                }
                defer { streams.withLock { $0 -= 1 } }
                let stopping = Mutex(false)
                try? await withGracefulShutdownHandler {
                    var shown: String?
                    var quiet = Duration.zero
                    while !Task.isCancelled, !stopping.withLock({ $0 }) {
                        let card = try await systemCard(try await Reports.preferences(store).days(in: timeZone))
                        if card != shown {
                            try await writer.write(ByteBuffer(string: Pages.statusEvent(card)))
                            shown = card
                            quiet = .zero
                        } else if quiet >= .seconds(15) {
                            try await writer.write(ByteBuffer(string: ": still here\n\n"))
                            quiet = .zero
                        }
                        try await Task.sleep(for: liveInterval)
                        quiet += liveInterval
                    }
                } onGracefulShutdown: {
                    stopping.withLock { $0 = true }
                }
                try? await writer.finish(nil)
            })
        }
        router.get("/") { request, _ -> Response in
            let notice = request.uri.queryParameters["done"].flatMap { notices.take(String($0)) }
            return html(try await todayPage(notice: notice))
        }
        for (path, script) in HTML.scripts {
            router.get(RouterPath(path)) { _, _ -> Response in
                var headers = securityHeaders
                headers[.contentType] = "text/javascript; charset=utf-8"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: script)))
            }
        }
        // A form: from this origin, with this dashboard's token, at most 16 KiB; stored through
        // the entry builder `healthgate log` uses; then back to the page (post, redirect, get).
        router.post("/log") { request, _ -> Response in
            let form: LogForm
            switch try await posted(LogForm.self, request, token: token, scheme: scheme, readOnly: access.readOnly) {
            case .refused(let refused): return refused
            case .form(let f): form = f
            }
            do {
                let preferences = try await Reports.preferences(store)
                let logged = try await ManualEntries.log(try form.request(), into: store, now: now(), timeZone: timeZone)
                onStored(logged.count)
                let key = notices.add("Logged " + logged.map { $0.line(in: preferences) }.joined(separator: "; "))
                return Response(status: .seeOther, headers: [.location: "/?done=\(key)", .cacheControl: "no-store"])
            } catch let error as EntryError {
                var response = html(try await todayPage(problem: error.description))
                response.status = .unprocessableContent
                return response
            }
        }
        @Sendable func entriesPage(_ day: LocalDay, notice: String? = nil, problem: String? = nil) async throws -> String {
            let preferences = try await Reports.preferences(store)
            let boundary = preferences.days(in: timeZone)
            let entries = try await dayEntries(store, day: day, boundary: boundary, units: preferences)
            return Pages.entries(entries, day: day, today: boundary.day(of: now()), token: access.readOnly ? nil : token.value,
                                 boundary: boundary, notice: notice, problem: problem)
        }
        router.get("/entries") { request, _ -> Response in
            let boundary = try await Reports.preferences(store).days(in: timeZone)
            var day = boundary.day(of: now())
            if let text = request.uri.queryParameters["day"] {
                guard let given = LocalDay(String(text)) else { throw HTTPError(.badRequest, message: "day must be YYYY-MM-DD") }
                day = given
            }
            let notice = request.uri.queryParameters["done"].flatMap { notices.take(String($0)) }
            return html(try await entriesPage(day, notice: notice))
        }
        // An edit or a deletion: of the version the page showed (else 409: it changed since),
        // through the store's edit and delete, as `healthgate edit` and `delete`.
        @Sendable func change(_ id: String, version: String, day: String?,
                              _ act: @Sendable (HealthRecord, DayBoundary) async throws -> String) async throws -> Response {
            let boundary = try await Reports.preferences(store).days(in: timeZone)
            let shown = day.flatMap(LocalDay.init) ?? boundary.day(of: now())
            func answer(_ status: HTTPResponse.Status, _ problem: String) async throws -> Response {
                var response = html(try await entriesPage(shown, problem: problem))
                response.status = status
                return response
            }
            guard let recordID = RecordID(string: id), let expected = Int(version) else {
                return refusal(.badRequest, "This is not a form of the dashboard.")
            }
            do {
                guard let current = try await store.history(id: recordID.description).first, let record = current.record, !current.deleted else {
                    return try await answer(.conflict, "this entry was deleted since the page was made")
                }
                guard current.version == expected else {
                    return try await answer(.conflict, "this entry changed since the page was made (it is at version \(current.version) now): "
                                            + "look at it again and change it again")
                }
                let key = notices.add(try await act(record, boundary))
                return Response(status: .seeOther, headers: [.location: "/entries?day=\(shown)&done=\(key)", .cacheControl: "no-store"])
            } catch let error as EntryError {
                return try await answer(.unprocessableContent, error.description)
            } catch let error as EditError {
                return try await answer(.unprocessableContent, error.description)
            }
        }
        router.post("/edit") { request, _ -> Response in
            switch try await posted(EditForm.self, request, token: token, scheme: scheme, readOnly: access.readOnly) {
            case .refused(let refused): return refused
            case .form(let form):
                return try await change(form.id, version: form.version, day: form.day) { record, boundary in
                    let changes = try form.changes(for: record, units: try await Reports.preferences(store))
                    let edited = try await store.edit(id: form.id, changes: changes, now: now())
                    onStored(1)
                    return "Changed \(DayEntry.what(edited)) of \(Pages.clock(edited.start, boundary)): version \(edited.version)"
                }
            }
        }
        router.post("/delete") { request, _ -> Response in
            switch try await posted(DeleteForm.self, request, token: token, scheme: scheme, readOnly: access.readOnly) {
            case .refused(let refused): return refused
            case .form(let form):
                return try await change(form.id, version: form.version, day: form.day) { record, boundary in
                    let deleted = try await store.delete(id: form.id)
                    onStored(1)
                    return "Deleted \(DayEntry.what(record)) of \(Pages.clock(record.start, boundary)) (version \(deleted.version) is its tombstone)"
                }
            }
        }
        router.get("/water") { request, _ -> Response in
            let range = try days(request)
            let (days, goal, preferences) = try await water(store, timeZone: timeZone, range: range, now: now())
            return html(Pages.water(days: days, goalMl: goal, units: preferences, range: range))
        }
        router.get("/vaping") { request, _ -> Response in
            let range = try days(request)
            return html(Pages.vaping(try await vaping(store, timeZone: timeZone, range: range, now: now()), range: range))
        }
        router.get("/habits") { _, _ -> Response in
            let boundary = try await Reports.preferences(store).days(in: timeZone)
            let history = try await Reports.habitHistory(store, days: boundary, now: now())
            let definitions = try await store.definitions(.habit)
            var goals: [String: HabitGoal] = [:]
            for d in definitions { goals[Definition.key(d.name)] = HabitGoal(d) }
            return html(Pages.habits(history.progress, names: userHabits(definitions.map(\.name)), goals: goals))
        }
        router.get("/habit") { request, _ -> Response in
            guard let name = request.uri.queryParameters["name"].map(String.init), !name.isEmpty, name.count <= 200 else {
                throw HTTPError(.badRequest, message: "name the habit: /habit?name=NAME")
            }
            guard let definition = try await store.definition(.habit, name: name) else {
                throw HTTPError(.notFound, message: "no habit is called that")
            }
            return html(Pages.habit(try await habit(store, definition, timeZone: timeZone, now: now())))
        }
        router.get("/vaping.csv") { request, _ -> Response in
            let range = try days(request)
            let figures = try await vaping(store, timeZone: timeZone, range: range, now: now())
            return csv(Pages.vapingCSV(figures), name: "vaping-\(range)-days.csv")
        }
        router.get("/water.csv") { request, _ -> Response in
            let range = try days(request)
            let (days, _, _) = try await water(store, timeZone: timeZone, range: range, now: now())
            return csv(Pages.waterCSV(days: days), name: "water-\(range)-days.csv")
        }
        addDataRoutes(to: router, store: store, timeZone: timeZone, now: now)
        var app = Application(router: router,
                              server: HTTPServerBuilder { responder in
                                  let plain = HTTP1Channel(responder: responder)
                                  guard let tls = access.tls else { return plain }
                                  return ReloadableTLSChannel(base: plain, certificates: tls, handshakeTimeout: .seconds(10))
                              },
                              configuration: .init(address: listen.bindAddress, serverName: "healthgate-dashboard"),
                              onServerRunning: { channel in
                                  switch listen {
                                  case .unix(let path):
                                      // The proxy's group may connect; nobody else.
                                      chmod(path, 0o660)
                                      onListening("unix:" + path)
                                  case .tcp(let host, let port):
                                      let address = channel.localAddress
                                      let shownHost = address?.ipAddress ?? host
                                      onListening(scheme + "://" + (shownHost.contains(":") ? "[\(shownHost)]" : shownHost)
                                                  + ":\(address?.port ?? port)/")
                                  }
                              },
                              logger: logger)
        if let tls = access.tls { app.addServices(TLSReloadService(certificates: tls, hangUps: tls.hangUps, logger: logger)) }
        return app
    }

    /// Where the dashboard listens when nothing says otherwise.
    public static let defaultAddress = "127.0.0.1:8470"

    /// `127.0.0.1:8470`, `[::1]:8470`, `localhost:0`, `0.0.0.0:8443` as host and port, checked: a
    /// loopback address unless `secured` (TLS and a password, ``DashboardAccess/secured``). The
    /// error is one sentence for the person who wrote it.
    public static func listenAddress(_ text: String, secured: Bool = false) -> Result<(host: String, port: Int), ListenAddressError> {
        let (host, portText) = hostAndPort(text)
        guard let portText, let port = Int(portText), (0...65535).contains(port), let host, !host.isEmpty else {
            return .failure(ListenAddressError("'\(text)' is not ADDRESS:PORT"))
        }
        guard isLoopback(host) || secured else {
            return .failure(ListenAddressError("'\(text)' is not on loopback: serving other machines needs TLS and a password "
                                               + "(a certificate, its key and a password hash from `healthgate dashboard hash-password`)"))
        }
        return .success((host.lowercased() == "localhost" ? "127.0.0.1" : String(host), port))
    }

    /// `HOST:PORT`, `[V6]:PORT`, `HOST` as host and port (nil where missing); host nil for an
    /// unclosed `[` or more than one `:` outside brackets.
    static func hostAndPort(_ text: String) -> (host: Substring?, port: Substring?) {
        if text.hasPrefix("[") {
            guard let end = text.firstIndex(of: "]") else { return (nil, nil) }
            let rest = text[text.index(after: end)...]
            return (text[text.index(after: text.startIndex)..<end], rest.hasPrefix(":") ? rest.dropFirst() : nil)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return (nil, nil) }
        return (parts[0], parts.count == 2 ? parts[1] : nil)
    }

    /// The names the dashboard answers to and may listen on.
    static func isLoopback(_ host: Substring) -> Bool { ["127.0.0.1", "::1", "localhost"].contains(host.lowercased()) }

    /// The habits the user defined (not the apps' own: water, vaping, meals), by name.
    static func userHabits(_ names: [String]) -> [String] {
        names.filter { !BuiltInHabit.all.contains(Definition.key($0)) }.sorted { $0.lowercased() < $1.lowercased() }
    }

    /// `?days=N`, one of ``ranges`` (30 when absent).
    static func days(_ request: Request) throws -> Int {
        guard let text = request.uri.queryParameters["days"] else { return 30 }
        guard let n = Int(String(text)), ranges.contains(n) else {
            throw HTTPError(.badRequest, message: "days must be one of \(ranges.map(String.init).joined(separator: ", "))")
        }
        return n
    }

    static func water(_ store: HealthStore, timeZone: TimeZone, range: Int, now: Date) async throws
        -> (days: [DailyBars.Day], goalMl: Double?, preferences: Preferences) {
        let preferences = try await Reports.preferences(store)
        let days = preferences.days(in: timeZone)
        let totals = try await Reports.daily(store, habit: BuiltInHabit.hydration, days: days, count: range, now: now)
        let goal = try await dailyGoal(store, BuiltInHabit.hydration, .atLeast)
        return (totals.map { DailyBars.Day(label: $0.day, value: $0.entries > 0 ? $0.sum : nil) }, goal, preferences)
    }

    /// A built-in habit's daily goal, as `today` reads it (``HabitTarget/daily(_:)``).
    static func dailyGoal(_ store: HealthStore, _ habit: String, _ direction: HabitTarget.Direction) async throws -> Double? {
        guard case .habit(let definition)? = try await store.definition(.habit, name: habit)?.body else { return nil }
        return definition.target?.daily(direction)
    }

    /// A form of this dashboard's pages, or the response refusing it: from this origin, at most
    /// 16 KiB, a form of these fields, with this dashboard's token.
    static func posted<Form: PostedForm>(_ type: Form.Type, _ request: Request, token: FormToken, scheme: String,
                                         readOnly: Bool = false) async throws -> Posted<Form> {
        guard !readOnly else { return .refused(refusal(.forbidden, "This dashboard is read-only: it takes no form.")) }
        guard sameOrigin(request, scheme: scheme) else { return .refused(refusal(.forbidden, "This form was sent from another site.")) }
        let body = try await request.body.collect(upTo: 16_384)
        let form: Form
        do {
            form = try URLEncodedFormDecoder().decode(Form.self, from: String(buffer: body))
        } catch {
            return .refused(refusal(.badRequest, "This is not a form of the dashboard."))
        }
        guard token.matches(form.csrf) else {
            return .refused(refusal(.forbidden, "This form is out of date or from elsewhere: reload the page and send it again."))
        }
        return .form(form)
    }

    /// One local day's records, for the entries page.
    static func dayEntries(_ store: HealthStore, day: LocalDay, boundary: DayBoundary, units: Preferences) async throws -> [DayEntry] {
        let range = DateRange(since: boundary.start(of: day), until: boundary.start(of: day.adding(1)))
        return DayEntry.entries(habits: try await store.habitEvents(in: range), weights: try await store.measurements(kind: .weight, in: range),
                                workouts: try await store.workouts(in: range), nights: try await store.sleepSessions(endingIn: range),
                                units: units)
    }

    /// Whether a form comes from a page of this dashboard: a browser says where it was sent from
    /// (`Origin`, `Sec-Fetch-Site`); a form from another site says so. A client that says
    /// nothing (a script on this machine) still needs the token.
    /// `scheme`: `http`, `https`, or `*` for either (behind a proxy).
    static func sameOrigin(_ request: Request, scheme: String) -> Bool {
        // Browsers of the last years say it in Sec-Fetch-Site; older ones only in Origin.
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!] { return site == "same-origin" || site == "none" }
        if let origin = request.headers[.origin] {
            guard let authority = request.head.authority else { return false }
            let schemes = scheme == "*" ? ["http", "https"] : [scheme]
            return schemes.contains { origin == $0 + "://" + authority }
        }
        return true
    }

    /// Where to go back to after the login: a path of this dashboard (`/water?days=7`), never
    /// another site (`//evil.example`, `https://...`) nor the login page itself.
    static func safeReturn(_ text: String) -> String {
        guard text.hasPrefix("/"), !text.hasPrefix("//"), !text.hasPrefix("/\\"), !text.hasPrefix("/login"),
              !text.contains(where: { $0.isNewline || $0 == "\\" }), text.count <= 500 else { return "/" }
        return text
    }

    static func refusal(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    static func vaping(_ store: HealthStore, timeZone: TimeZone, range: Int, now: Date) async throws -> VapingFigures {
        let preferences = try await Reports.preferences(store)
        let boundary = preferences.days(in: timeZone)
        let totals = try await Reports.daily(store, habit: BuiltInHabit.vaping, days: boundary, count: range, now: now)
        let first = boundary.start(of: boundary.day(of: now).adding(1 - range))
        let sessions = try await store.habitEvents(in: DateRange(since: first, until: now.addingTimeInterval(0.001)))
            .filter { Definition.key($0.habit) == BuiltInHabit.vaping && $0.isCheckIn }
        let firstEver = try await store.everyHabitSpan()[Definition.key(BuiltInHabit.vaping)]?.first
        return VapingFigures.compute(days: totals, firstEver: firstEver, sessions: sessions, boundary: boundary, now: now,
                                     goal: try await dailyGoal(store, BuiltInHabit.vaping, .atMost))
    }

    /// A habit's last 53 weeks, by the same totals and goal rule as `today` and `stats`.
    static func habit(_ store: HealthStore, _ definition: Definition, timeZone: TimeZone, now: Date) async throws -> HabitFigures {
        let boundary = try await Reports.preferences(store).days(in: timeZone)
        let today = boundary.day(of: now)
        let firstDay = today.adding(1 - today.isoWeekday - 52 * 7)
        let count = firstDay.days(to: today) + 1
        let totals = try await Reports.daily(store, habit: definition.name, days: boundary, count: count, now: now)
        let history = try await Reports.habitHistory(store, days: boundary, now: now)
        let progress = history.progress.first { Definition.key($0.habit) == Definition.key(definition.name) }
        let goal = HabitGoal(definition)
        var span = try await store.everyHabitSpan()[Definition.key(definition.name)]?.first
        if case .habit(let h) = definition.body, let derivation = h.derivation { span = try await Reports.derivationStart(store, derivation) }
        let start = boundary.day(of: min(definition.time, span ?? definition.time)).description
        let skips = Set(try await store.everyHabitSkip(in: DateRange(since: boundary.start(of: firstDay), until: now))[Definition.key(definition.name)]?
            .map { boundary.day(of: $0).description } ?? [])
        var cells: [HabitFigures.Cell] = totals.map { t in
            let total = BucketTotal(bucket: 0, count: t.entries, sum: t.sum)
            let before = t.day < start
            var met = before || goal?.period != .day ? nil : goal?.isMet(total)
            let skipped = !before && met != true && skips.contains(t.day)
            if skipped { met = nil }
            return HabitFigures.Cell(day: t.day, amount: goal?.amount(total) ?? Double(t.entries), entries: t.entries,
                                     met: met, before: before, future: false, skipped: skipped)
        }
        var day = today.adding(1)
        while cells.count % 7 != 0 {
            cells.append(HabitFigures.Cell(day: day.description, amount: 0, entries: 0, met: nil, before: false, future: true))
            day = day.adding(1)
        }
        let unit: String?
        if case .habit(let h) = definition.body { unit = h.unit } else { unit = nil }
        return HabitFigures(name: definition.name, goal: goal, unit: unit, progress: progress,
                            weeks: stride(from: 0, to: cells.count, by: 7).map { Array(cells[$0..<$0 + 7]) })
    }

    static func csv(_ text: String, name: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/csv; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"\(name)\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff",
        .cacheControl: "no-store",
        // Not `no-referrer`: with it a browser sends `Origin: null` on the page's own forms.
        HTTPField.Name("Referrer-Policy")!: "same-origin",
    ]

    static func html(_ page: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}

/// Where the dashboard listens: a TCP address (``DashboardServer/listenAddress(_:secured:)``)
/// or a Unix socket (`unix:/run/healthgate/dashboard.sock`), for a reverse proxy on the box.
public enum DashboardListen: Sendable, Equatable {
    case tcp(host: String, port: Int)
    case unix(path: String)

    /// `HOST:PORT` as ``DashboardServer/listenAddress(_:secured:)`` reads it, or `unix:PATH`
    /// (an absolute path, at most 107 bytes: the kernel's limit for a socket's path).
    public static func parse(_ text: String, secured: Bool = false) -> Result<DashboardListen, ListenAddressError> {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard path.hasPrefix("/"), path.utf8.count <= 107, !path.contains("\0") else {
                return .failure(ListenAddressError("'\(text)' is not unix:PATH with an absolute path of at most 107 bytes"))
            }
            return .success(.unix(path: path))
        }
        return DashboardServer.listenAddress(text, secured: secured).map { .tcp(host: $0.host, port: $0.port) }
    }

    var bindAddress: BindAddress {
        switch self {
        case .tcp(let host, let port): .hostname(host, port: port)
        case .unix(let path): .unixDomainSocket(path: path)
        }
    }
}

/// A posted form, or the response that refuses it.
enum Posted<Form: Sendable>: Sendable {
    case form(Form)
    case refused(Response)
}

/// Why a listening address was refused.
public struct ListenAddressError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Requests for another host are refused (421): a page on another site that resolves its own
/// name to 127.0.0.1 (DNS rebinding) cannot read the dashboard through the user's browser.
struct LoopbackHostMiddleware: RouterMiddleware {
    typealias Context = DashboardContext
    static func allowed(_ authority: String?) -> Bool {
        guard let authority, let host = DashboardServer.hostAndPort(authority).host else { return false }
        return DashboardServer.isLoopback(host)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.allowed(request.head.authority) else {
            return DashboardServer.refusal(.misdirectedRequest, "This dashboard answers only to localhost.")
        }
        return try await next(request, context)
    }
}
