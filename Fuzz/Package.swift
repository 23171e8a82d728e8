// swift-tools-version:6.1
import PackageDescription

/// libFuzzer targets for HealthGate's pure decoders (`make fuzz`, see README.md here).
///
/// A separate package so that the main one carries no sanitizer flags: it depends on the root
/// package by path and links its `HealthGateDecoders` product. The Makefile builds it with
/// `--sanitize fuzzer` (SwiftPM then links libFuzzer's `main` instead of the target's) and
/// `-Xswiftc -sanitize=fuzzer,address` for every module, so the decoders are instrumented as well
/// as the targets (of two `-sanitize=` flags only the last counts, so SwiftPM's
/// `--sanitize fuzzer --sanitize address` would lose the coverage instrumentation). Each folder
/// `Targets/fuzz-NAME` is one target: a file defining `LLVMFuzzerTestOneInput` (libFuzzer supplies
/// `main`, hence `-parse-as-library`).
///
/// The list is written out rather than read from the folder: SwiftPM caches a manifest's result
/// by the manifest's own text, so a listing would go stale when a target is added (CI once failed
/// with "no product named 'fuzz-applehealth'"). `make fuzz-build` checks it against the folders.
let targets = [
    "fuzz-acl",
    "fuzz-antframe",
    "fuzz-antfs",
    "fuzz-antplus",
    "fuzz-applehealth",
    "fuzz-att",
    "fuzz-btsnoop",
    "fuzz-capture",
    "fuzz-csv",
    "fuzz-derived",
    "fuzz-entry",
    "fuzz-exec",
    "fuzz-fit",
    "fuzz-gadgetbridge",
    "fuzz-gatt",
    "fuzz-gpx",
    "fuzz-h4",
    "fuzz-hci",
    "fuzz-l2cap",
    "fuzz-socket",
    "fuzz-syncjson",
    "fuzz-tcx",
    "fuzz-watchlisting",
    "fuzz-xml",
    "fuzz-zip",
]

/// The root package's language settings (see its Package.swift).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "HealthGateFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "HealthGate", path: "..")],
    targets: [
        // How the targets read their input (a byte reader, chunking).
        .target(name: "FuzzSupport", path: "Support", swiftSettings: swiftSettings),
    ] + targets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", .product(name: "HealthGateDecoders", package: "HealthGate")],
            path: "Targets/\(name)",
            swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
        )
    }
)
