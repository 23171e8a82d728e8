import Foundation
import Hummingbird
import SyncProtocol
import WebSecurity

/// Accounts, logins (device tokens) and devices.
struct AccountRoutes {
    let deps: ServerDependencies

    func addOpen(to group: RouterGroup<ServerContext>) {
        group.post("accounts", use: register)
        group.post("sessions", use: login)
    }

    func addAuthenticated(to group: RouterGroup<ServerContext>) {
        group.delete("sessions/current", use: logout)
        group.put("accounts/current/password", use: changePassword)
        group.post("accounts/current/deletion", use: deleteAccount)
        group.get("devices", use: devices)
        group.delete("devices/:id", use: revokeDevice)
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
        if let wait = try await deps.registrations.admit(client: client) {
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
    /// 429 (too many failures, see ``LoginAttempts``).
    @Sendable func login(_ request: Request, context: ServerContext) async throws -> Response {
        let body = try await JSONBody.decode(LoginRequest.self, from: request, limit: deps.limits.smallBodyBytes)
        let deviceName = try Credentials.deviceName(body.deviceName)
        // A malformed email cannot belong to an account: a failure like any other.
        let email = (try? Credentials.email(body.email)) ?? EmailAddress.normalize(body.email)
        let client = context.clientAddress
        if let wait = try await deps.throttle.retryAfter(email: email, client: client) {
            context.logger.notice("login refused: too many failures", metadata: ["client": "\(client)"])
            throw APIError.tooManyRequests("too many failed logins: try again in \(wait) s", retryAfter: wait)
        }
        let account = try await deps.store.account(email: email)
        let valid: Bool
        if let account {
            valid = await deps.hasher.verify(body.password, hash: account.passwordHash)
        } else {
            await deps.hasher.verifyDecoy(body.password, against: try await deps.store.randomPasswordHash())
            valid = false
        }
        guard let account, valid else {
            try await deps.throttle.recordFailure(email: email, client: client)
            context.logger.notice("login failed", metadata: ["client": "\(client)"])
            throw APIError.unauthorized("wrong email or password")
        }
        try await deps.throttle.recordSuccess(email: email, client: client)
        if deps.hasher.needsRehash(account.passwordHash) {
            let rehashed = await deps.hasher.hash(body.password)
            if try await deps.store.replacePasswordHash(userId: account.id, old: account.passwordHash, new: rehashed) {
                context.logger.info("password rehashed", metadata: ["user": "\(account.id)", "cost": "\(deps.hasher.cost)"])
            }
        }
        let token = SecretToken.generate()
        let device = try await deps.store.createDevice(userId: account.id, name: deviceName, tokenHash: SecretToken.hash(token),
                                                       now: Date())
        context.logger.info("device logged in", metadata: ["user": "\(account.id)", "device": "\(device.id)"])
        return JSONResponse.make(LoginResponse(userId: account.id, deviceId: device.id, token: token), status: .created)
    }

    /// `DELETE /v1/sessions/current`: the calling token stops working. 204.
    @Sendable func logout(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        _ = try await deps.store.revokeDevice(id: principal.deviceId, userId: principal.userId, now: Date())
        context.logger.info("device logged out", metadata: ["device": "\(principal.deviceId)"])
        return Response(status: .noContent)
    }

    /// `PUT /v1/accounts/current/password`: 200 with how many other devices were logged out;
    /// 400 (new password), 403 (wrong current password), 429 (too many wrong passwords).
    @Sendable func changePassword(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let body = try await JSONBody.decode(PasswordChangeRequest.self, from: request, limit: deps.limits.smallBodyBytes)
        try Credentials.checkNewPassword(body.newPassword)
        try await checkPassword(body.currentPassword, of: principal, context: context)
        let hash = await deps.hasher.hash(body.newPassword)
        let revoked = try await deps.store.changePassword(userId: principal.userId, passwordHash: hash,
                                                          keepDeviceId: principal.deviceId, now: Date())
        context.logger.info("password changed", metadata: ["user": "\(principal.userId)", "revoked": "\(revoked)"])
        return JSONResponse.make(PasswordChangeResponse(revokedDevices: revoked))
    }

    /// `POST /v1/accounts/current/deletion`: deletes the account, its devices and records. 204;
    /// 403 (wrong password), 429 (too many wrong passwords).
    @Sendable func deleteAccount(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let body = try await JSONBody.decode(AccountDeletionRequest.self, from: request, limit: deps.limits.smallBodyBytes)
        try await checkPassword(body.password, of: principal, context: context)
        let records = try await deps.store.deleteAccount(userId: principal.userId)
        context.logger.info("account deleted", metadata: ["user": "\(principal.userId)", "records": "\(records)"])
        return Response(status: .noContent)
    }

    /// The password of the principal's account, checked under the same rate limits as logins (a
    /// stolen token must not become a way to guess the password).
    private func checkPassword(_ password: String, of principal: Principal, context: ServerContext) async throws {
        guard let account = try await deps.store.account(id: principal.userId) else {
            throw APIError.unauthorized("the device token is not valid (wrong, or logged out)")
        }
        let client = context.clientAddress
        if let wait = try await deps.throttle.retryAfter(email: account.email, client: client) {
            context.logger.notice("password check refused: too many failures", metadata: ["client": "\(client)"])
            throw APIError.tooManyRequests("too many wrong passwords: try again in \(wait) s", retryAfter: wait)
        }
        guard await deps.hasher.verify(password, hash: account.passwordHash) else {
            try await deps.throttle.recordFailure(email: account.email, client: client)
            context.logger.notice("password check failed", metadata: ["client": "\(client)", "user": "\(account.id)"])
            throw APIError.forbidden("the password is wrong")
        }
        try await deps.throttle.recordSuccess(email: account.email, client: client)
    }

    /// `GET /v1/devices`: the user's logged-in devices (expired ones left out).
    @Sendable func devices(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let devices = try await deps.store.devices(userId: principal.userId, seenSince: deps.tokenExpiry.cutoff(now: Date()))
        return JSONResponse.make(DeviceList(devices: devices.map(\.info)))
    }

    /// `DELETE /v1/devices/{id}`: revokes one of the user's devices (a lost one, say; the calling
    /// one is a logout). 204; 404 when the user has no such device logged in.
    @Sendable func revokeDevice(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let id = (context.parameters.get("id")?.removingPercentEncoding ?? "").lowercased()
        guard try await deps.store.revokeDevice(id: id, userId: principal.userId, now: Date()) else {
            throw APIError.notFound("no logged-in device \(id) in this account")
        }
        context.logger.info("device revoked", metadata: ["device": "\(id)", "by": "\(principal.deviceId)"])
        return Response(status: .noContent)
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

    /// The normalized email, or 400: one `@` between a non-empty local part and domain, at most
    /// 254 characters, no spaces or control characters.
    static func email(_ text: String) throws -> String {
        let email = EmailAddress.normalize(text)
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
