/// Why a characteristic value could not be decoded: which characteristic, at which byte, and why.
///
/// Decoders throw only this type and never trap, whatever the input.
public struct ProfileDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The value ended inside `field`: it needs `needed` bytes and `available` were left.
        case truncated(field: String, needed: Int, available: Int)
        /// `field` holds a value the specification forbids (for example a battery level above 100).
        case invalidValue(field: String, value: Int)
    }

    /// The characteristic's 16-bit UUID.
    public var characteristic: UInt16
    /// Byte offset in the characteristic value where the bad field starts.
    public var offset: Int
    public var reason: Reason

    public init(characteristic: UInt16, offset: Int, reason: Reason) {
        self.characteristic = characteristic
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        let name = GATTNames.describeCharacteristic(characteristic)
        switch reason {
        case .truncated(let field, let needed, let available):
            return "\(name): truncated at byte \(offset): \(field) needs \(needed) byte(s), \(available) left"
        case .invalidValue(let field, let value):
            return "\(name): invalid \(field) \(value) at byte \(offset)"
        }
    }
}
