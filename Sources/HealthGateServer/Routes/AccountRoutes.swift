import Foundation
import Hummingbird
import SyncProtocol

/// Accounts, logins (device tokens) and devices.
struct AccountRoutes {
    let deps: ServerDependencies

    func addOpen(to group: RouterGroup<ServerContext>) {
        group.post("accounts", use: register)
        group.post("sessions", use: login)
    }

    func addAuthenticated(to group: RouterGroup<ServerContext>) {
        group.delete("sessions/current", use: logout)
        group.get("devices", use: devices)
        group.put("devices/current/primary", use: markPrimary)
    }

    /// `POST /v1/accounts`: 201, 400 (email, password), 409 (email exists), 429 (too many
    /// registrations from the address).
    @Sendable func register(_ request: Request, context: ServerContext) async throws -> Response {
        let body = try await JSONBody.decode(RegisterRequest.self, from: request, limit: deps.limits.smallBodyBytes)
        let email = try Credentials.email(body.email)
        try Credentials.checkNewPassword(body.password)
        // Counted once the request is well-formed: what is limited is the hashing and the answer.
        let client = context.clientAddress
        if let wait = deps.registrations.admit(client: client) {
            context.logger.notice("registration refused: too many from the address", metadata: ["client": "\(client)"])
            throw APIError.tooManyRequests("too many registrations from this address: try again in \(wait) s", retryAfter: wait)
        }
        let hash = await deps.hasher.hash(body.password)
        do {
            let account = try await deps.store.createAccount(email: email, passwordHash: hash, now: Date())
            context.logger.info("account created", metadata: ["user": "\(account.id)"])
            return JSONResponse.make(RegisterResponse(userId: account.id), status: .created)
        } catch StoreError.emailTaken {
            throw APIError.conflict("an account with this email exists")
        }
    }

    /// `POST /v1/sessions`: 201 with a new device token, 400, 401 (wrong email or password),
    /// 429 (too many failures for the email or from the address).
    @Sendable func login(_ request: Request, context: ServerContext) async throws -> Response {
        let body = try await JSONBody.decode(LoginRequest.self, from: request, limit: deps.limits.smallBodyBytes)
        let deviceName = try Credentials.deviceName(body.deviceName)
        // A malformed email cannot belong to an account: a failure like any other.
        let email = (try? Credentials.email(body.email)) ?? Credentials.normalize(body.email)
        let client = context.clientAddress
        if let wait = deps.throttle.retryAfter(email: email, client: client) {
            context.logger.notice("login refused: too many failures", metadata: ["client": "\(client)"])
            throw APIError.tooManyRequests("too many failed logins: try again in \(wait) s", retryAfter: wait)
        }
        let account = try await deps.store.account(email: email)
        let valid: Bool
        if let account {
            valid = await deps.hasher.verify(body.password, hash: account.passwordHash)
        } else {
            await deps.hasher.verifyDecoy(body.password)
            valid = false
        }
        guard let account, valid else {
            deps.throttle.recordFailure(email: email, client: client)
            context.logger.notice("login failed", metadata: ["client": "\(client)"])
            throw APIError.unauthorized("wrong email or password")
        }
        deps.throttle.recordSuccess(email: email)
        let token = DeviceToken.generate()
        let device = try await deps.store.createDevice(userId: account.id, name: deviceName, tokenHash: DeviceToken.hash(token),
                                                       now: Date())
        context.logger.info("device logged in", metadata: ["user": "\(account.id)", "device": "\(device.id)"])
        return JSONResponse.make(LoginResponse(userId: account.id, deviceId: device.id, token: token), status: .created)
    }

    /// `DELETE /v1/sessions/current`: the calling token stops working. 204.
    @Sendable func logout(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        try await deps.store.revokeDevice(id: principal.deviceId, userId: principal.userId, now: Date())
        context.logger.info("device logged out", metadata: ["device": "\(principal.deviceId)"])
        return Response(status: .noContent)
    }

    /// `GET /v1/devices`: the user's logged-in devices.
    @Sendable func devices(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let devices = try await deps.store.devices(userId: principal.userId)
        return JSONResponse.make(DeviceList(devices: devices.map(\.info)))
    }

    /// `PUT /v1/devices/current/primary`: the calling device becomes the user's only primary one.
    @Sendable func markPrimary(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let device = try await deps.store.markPrimary(deviceId: principal.deviceId, userId: principal.userId)
        return JSONResponse.make(device.info)
    }
}

/// Rules for what people type in: emails, passwords, device names.
enum Credentials {
    static let passwordCharacters = 8...1024
    static let deviceNameCharacters = 1...100

    /// Trimmed and lower-cased: `Ann@Example.org ` and `ann@example.org` are one account.
    static func normalize(_ email: String) -> String {
        email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// The normalized email, or 400: one `@` between a non-empty local part and domain, at most
    /// 254 characters, no spaces or control characters.
    static func email(_ text: String) throws -> String {
        let email = normalize(text)
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        let clean = email.unicodeScalars.allSatisfy { !CharacterSet.whitespacesAndNewlines.contains($0) && !CharacterSet.controlCharacters.contains($0) }
        guard email.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64, !parts[1].isEmpty,
              !parts[1].hasPrefix("."), !parts[1].hasSuffix("."), clean else {
            throw APIError.badRequest("email is not a valid address")
        }
        return email
    }

    static func checkNewPassword(_ password: String) throws {
        guard password.count >= passwordCharacters.lowerBound else {
            throw APIError.badRequest("password must have at least \(passwordCharacters.lowerBound) characters")
        }
        guard password.count <= passwordCharacters.upperBound else {
            throw APIError.badRequest("password must have at most \(passwordCharacters.upperBound) characters")
        }
    }

    /// The trimmed name, or 400.
    static func deviceName(_ text: String) throws -> String {
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard deviceNameCharacters.contains(name.count) else {
            throw APIError.badRequest("device_name must have \(deviceNameCharacters.lowerBound) to \(deviceNameCharacters.upperBound) characters")
        }
        return name
    }
}
