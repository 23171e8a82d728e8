public import Foundation

/// When a device token stops working: once its device has not been seen (no request with the
/// token) for `idleDays` days. A device is "seen" at most once a minute (see
/// ``ServerStore/touchDevice(id:now:)``), which is plenty for a rule counted in days. An expired
/// token answers 401 and is revoked on the spot, so it stays dead even if the limit is raised
/// later; until then an idle device is left out of the device list. Pure.
public struct TokenExpiry: Sendable, Equatable {
    /// 0: tokens never expire.
    public var idleDays: Int

    public static let defaultIdleDays = 90
    /// The longest limit accepted (100 years); 0 turns expiry off.
    public static let idleDaysRange = 0...36_500

    public init(idleDays: Int = TokenExpiry.defaultIdleDays) {
        self.idleDays = idleDays
    }

    /// Devices last seen before this time have expired; nil when tokens never expire.
    public func cutoff(now: Date) -> Date? {
        idleDays > 0 ? now.addingTimeInterval(-Double(idleDays) * 86_400) : nil
    }

    /// Whether a device last seen at `lastSeen` has expired at `now`.
    public func isExpired(lastSeen: Date, now: Date) -> Bool {
        cutoff(now: now).map { lastSeen < $0 } ?? false
    }
}
