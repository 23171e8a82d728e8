import Foundation

/// What `healthgate login` saves next to the database: the server, the account and this
/// device's token (the file is readable by its owner only).
public struct SyncCredentials: Codable, Sendable, Equatable {
    public var server: String
    public var email: String
    public var userId: String
    public var deviceId: String
    public var token: String

    enum CodingKeys: String, CodingKey {
        case server, email, userId = "user_id", deviceId = "device_id", token
    }

    public init(server: String, email: String, userId: String, deviceId: String, token: String) {
        self.server = server
        self.email = email
        self.userId = userId
        self.deviceId = deviceId
        self.token = token
    }
}
