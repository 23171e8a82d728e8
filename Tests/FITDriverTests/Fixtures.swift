import DriverKit
import Foundation
import HealthModel
@testable import FITDriver

/// Paths and helpers shared by the FIT tests.
enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let fit = root.appendingPathComponent("Fixtures/fit")

    static func data(_ name: String) throws -> Data { try Data(contentsOf: fit.appendingPathComponent(name)) }

    /// Every `Fixtures/fit/*.fit` file name.
    static func fitFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: fit.path).filter { $0.hasSuffix(".fit") }.sorted()
    }

    /// `fitFiles()` for parameterised tests. A folder that cannot be read or holds no fixture
    /// gives one name that names the problem, so that each such test fails on it (an empty list
    /// would run zero cases and pass).
    static func fitFileNames() -> [String] {
        do {
            let names = try fitFiles()
            return names.isEmpty ? ["no .fit file in \(fit.path).fit"] : names
        } catch {
            return ["cannot list \(fit.path): \(error).fit"]
        }
    }

    static func workoutsOf(_ records: [HealthRecord]) -> [Workout] {
        records.compactMap { if case .workout(let w) = $0 { w } else { nil } }
    }

    static func measurements(_ records: [HealthRecord]) -> [HealthModel.Measurement] {
        records.compactMap { if case .measurement(let m) = $0 { m } else { nil } }
    }

    static func sleeps(_ records: [HealthRecord]) -> [SleepSession] {
        records.compactMap { if case .sleep(let s) = $0 { s } else { nil } }
    }

    /// Runs the importer through a CollectingSink, as the pipeline does.
    static func importRecords(_ data: Data, path: String = "test.fit") async -> (records: [HealthRecord], error: DecodeError?) {
        let sink = CollectingSink()
        do {
            try await FITImporter().importFile(ImportSource(path: path, data: data), into: sink)
            return (sink.records, nil)
        } catch let error as DecodeError {
            return (sink.records, error)
        } catch {
            Issue.record("unexpected error type: \(error)")
            return (sink.records, nil)
        }
    }
}

import Testing
