import Dispatch
import Foundation
import HealthModel
import HummingbirdBcrypt

/// bcrypt password hashes, computed off the request threads.
///
/// The password goes through SHA-256 (base64) before bcrypt, so that every character of a
/// long passphrase counts (bcrypt reads 72 bytes at most) and a NUL byte cannot cut it short.
public struct PasswordHasher: Sendable {
    /// bcrypt's cost (log2 of the rounds), 4...31.
    public let cost: UInt8
    /// A hash of a random password: unknown emails are checked against it, so that a login for
    /// an unknown account takes as long as one with a wrong password.
    private let decoy: String

    public static let defaultCost: UInt8 = 12
    public static let costs: ClosedRange<UInt8> = 4...31

    public init(cost: UInt8 = PasswordHasher.defaultCost) {
        precondition(Self.costs.contains(cost), "bcrypt cost \(cost) is outside 4...31")
        self.cost = cost
        decoy = Bcrypt.hash(Self.prehash(DeviceToken.generate()), cost: cost)
    }

    public func hash(_ password: String) async -> String {
        let cost = cost
        return await Self.offload { Bcrypt.hash(Self.prehash(password), cost: cost) }
    }

    public func verify(_ password: String, hash: String) async -> Bool {
        await Self.offload { Bcrypt.verify(Self.prehash(password), hash: hash) }
    }

    /// Spends the time of one check without an account (see `decoy`).
    public func verifyDecoy(_ password: String) async {
        _ = await verify(password, hash: decoy)
    }

    static func prehash(_ password: String) -> String {
        Data(Array(password.utf8).withUnsafeBytes { SHA256.digest($0) }).base64EncodedString()
    }

    /// bcrypt is slow on purpose: it runs on its own queue, not on the concurrency pool.
    private static let queue = DispatchQueue(label: "healthgate-server.bcrypt", attributes: .concurrent)

    private static func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
