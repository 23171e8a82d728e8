import Foundation
import HealthStore
import LinuxAdapters

/// What `healthgate login` saves next to the database: the server, the account and this
/// device's token (the file is readable by its owner only).
public struct SyncCredentials: Codable, Sendable, Equatable {
    public var server: String
    public var email: String
    public var userId: String
    public var deviceId: String
    public var token: String
    /// The pinned CA (PEM) given at login, if any.
    public var caFile: String?

    enum CodingKeys: String, CodingKey {
        case server, email, userId = "user_id", deviceId = "device_id", token, caFile = "ca_file"
    }

    public init(server: String, email: String, userId: String, deviceId: String, token: String, caFile: String? = nil) {
        self.server = server
        self.email = email
        self.userId = userId
        self.deviceId = deviceId
        self.token = token
        self.caFile = caFile
    }
}

extension SyncCredentials {
    /// Where the credentials of the database at `databasePath` live: next to it.
    public static func path(forDatabase databasePath: String) -> String {
        databasePath + ".sync.json"
    }

    /// Reads saved credentials; nil when not logged in.
    public static func load(forDatabase databasePath: String) throws -> SyncCredentials? {
        try load(path: path(forDatabase: databasePath))
    }

    /// Reads the credentials file at `path`; nil when there is none.
    public static func load(path: String) throws -> SyncCredentials? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try JSONDecoder().decode(SyncCredentials.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Saves the credentials readable and writable by the owner only (mode 0600), replacing the
    /// file atomically: written to a temporary file created with that mode, then renamed.
    public func save(forDatabase databasePath: String) throws {
        let path = Self.path(forDatabase: databasePath)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            try PrivateFiles.write(try encoder.encode(self), to: path)
        } catch {
            throw CredentialsError("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Deletes saved credentials (logout); true if there were some.
    @discardableResult
    public static func remove(forDatabase databasePath: String) -> Bool {
        unlink(path(forDatabase: databasePath)) == 0
    }
}

public struct CredentialsError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
