import Foundation

/// How the server compares email addresses: one address, however typed, is one account.
public enum EmailAddress {
    /// Trimmed, then NFKC, full Unicode case folding and NFKC again (Unicode's NFKC_Casefold
    /// recipe): `Ann@Example.org `, `ann@example.org`, `ＡＮＮ@example.org` and `ann@EXAMPLE.ORG` are
    /// one account, and so are `Straße@x.org` and `strasse@x.org` (folding maps ß to ss) or
    /// `ﬁ@x.org` and `fi@x.org`.
    public static func normalize(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines)
            .precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping
    }
}
