import Crypto
import Dispatch
import Foundation
import HealthModel
import HummingbirdBcrypt
import Timing

/// bcrypt password hashes, computed off the request threads.
///
/// The password goes through SHA-256 (base64) before bcrypt, so that every character of a
/// long passphrase counts (bcrypt reads 72 bytes at most) and a NUL byte cannot cut it short.
public struct PasswordHasher: Sendable {
    /// bcrypt's cost (log2 of the rounds), 4...31, of new hashes.
    public let cost: UInt8
    public static let defaultCost: UInt8 = 12
    public static let costs: ClosedRange<UInt8> = 4...31

    public init(cost: UInt8 = PasswordHasher.defaultCost) {
        precondition(Self.costs.contains(cost), "bcrypt cost \(cost) is outside 4...31")
        self.cost = cost
    }

    public func hash(_ password: String) async -> String {
        let cost = cost
        return await Self.offload { Bcrypt.hash(Self.prehash(password), cost: cost) }
    }

    public func verify(_ password: String, hash: String) async -> Bool {
        await Self.verify(password, hash: hash)
    }

    /// Whether `password` is the one `hash` was made of (any cost).
    public static func verify(_ password: String, hash: String) async -> Bool {
        await offload { Bcrypt.verify(prehash(password), hash: hash) }
    }

    /// Spends the time of one check for a login without an account: `password` is checked
    /// against `storedHash` (a stored hash picked at random, so that an unknown email costs what
    /// the accounts' hashes cost, whatever cost they were made with) and the answer thrown away;
    /// against a hash at ``cost`` when the server has no account.
    public func verifyDecoy(_ password: String, against storedHash: String?) async {
        // Without an account, a random password hashed at ``cost`` takes what checking one takes
        // (both are one bcrypt at that cost), and needs no hash made in advance.
        if let storedHash { _ = await verify(password, hash: storedHash) } else { _ = await hash(SecretToken.generate()) }
    }

    /// The cost a bcrypt hash was made with (`$2b$12$...` -> 12); nil for anything else.
    public static func cost(of hash: String) -> UInt8? {
        let parts = hash.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].isEmpty, parts[1].hasPrefix("2"), parts[2].count == 2 else { return nil }
        return UInt8(parts[2])
    }

    /// Whether a hash that just verified should be made again at ``cost`` (the configured cost
    /// changed since it was made).
    public func needsRehash(_ hash: String) -> Bool {
        Self.cost(of: hash) != cost
    }

    /// SHA-256 of the password, base64: what bcrypt is given.
    public static func prehash(_ password: String) -> String {
        Data(SHA256.hash(data: Array(password.utf8))).base64EncodedString()
    }

    /// bcrypt is slow on purpose: it runs on its own queue, not on the concurrency pool.
    private static let queue = DispatchQueue(label: "healthgate.bcrypt", attributes: .concurrent)

    private static func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await OffPool.run(on: queue, work)
    }
}
