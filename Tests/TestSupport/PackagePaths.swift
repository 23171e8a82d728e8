import Foundation

/// The package's root folder, found from this file's path, and its fixtures: the one
/// package-root and fixture helper of the test targets.
public enum PackagePaths {
    /// The package root (`Package.swift`'s folder).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    /// `Fixtures/`.
    public static let fixtures = root + "/Fixtures"

    /// A fixture's path: `fixture("fit/garmin-fenix5-run.fit")`.
    public static func fixture(_ relative: String) -> String { fixtures + "/" + relative }
}
