/// The reference server's version, reported by `GET /v1/health`.
public enum ServerVersion {
    public static let current = "0.1.0"
}
