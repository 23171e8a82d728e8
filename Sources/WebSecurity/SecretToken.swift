import Crypto
import Foundation
import HealthModel

/// Secrets handed to a client: a server's device tokens, a dashboard's session cookies. 32 random
/// bytes, base64url without padding (43 characters). Only ``hash(_:)`` of a token is kept; the
/// token itself is shown once (the login answer, the cookie).
public enum SecretToken {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<4 {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// SHA-256 of the token's UTF-8 bytes, lower-case hex: what storage keeps and looks up.
    public static func hash(_ token: String) -> String {
        Hex.lowercase(SHA256.hash(data: Array(token.utf8)))
    }
}
