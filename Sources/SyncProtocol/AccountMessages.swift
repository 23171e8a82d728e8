import Foundation

// Bodies of the account, device and deletion requests added to protocol version 1 (the
// endpoints are described in openapi/healthgate-sync.yaml).

/// `PUT /v1/accounts/current/password`: a new password, given the current one. Every other
/// device of the account is logged out; the calling one stays logged in.
public struct PasswordChangeRequest: Codable, Sendable, Equatable {
    public var currentPassword: String
    public var newPassword: String
    enum CodingKeys: String, CodingKey { case currentPassword = "current_password", newPassword = "new_password" }
    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}

/// 200 answer to ``PasswordChangeRequest``.
public struct PasswordChangeResponse: Codable, Sendable, Equatable {
    /// How many other devices were logged out.
    public var revokedDevices: Int
    enum CodingKeys: String, CodingKey { case revokedDevices = "revoked_devices" }
    public init(revokedDevices: Int) { self.revokedDevices = revokedDevices }
}

/// `POST /v1/accounts/current/deletion`: deletes the account with its records and devices.
public struct AccountDeletionRequest: Codable, Sendable, Equatable {
    /// The account's password, asked again for something this final.
    public var password: String
    public init(password: String) { self.password = password }
}

/// 200 answer to `DELETE /v1/records`.
public struct RecordDeletionResponse: Codable, Sendable, Equatable {
    /// How many records were deleted (records deleted before are not counted again).
    public var deleted: Int
    public init(deleted: Int) { self.deleted = deleted }
}
