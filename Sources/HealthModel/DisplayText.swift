/// Text from outside (a server's error message, a device's name, a file's contents) made safe to
/// print on a terminal or in a log line: control characters (escape sequences that could move
/// the cursor, retitle the window, clear the screen or forge a line) and bidirectional overrides
/// are shown as `\u{..}` escapes instead of acting, and very long text is cut.
public enum DisplayText {
    /// `text` with every C0/C1 control character (newlines and tabs included), DEL and
    /// bidirectional formatting character escaped; at most `limit` characters, then `…`.
    public static func safe(_ text: some StringProtocol, limit: Int = 500) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit {
                out += "…"
                break
            }
            if isUnsafe(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out
    }

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // Bidirectional embeddings, overrides and isolates; the line and paragraph separators.
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C, 0x2028, 0x2029: true
        default: false
        }
    }
}
