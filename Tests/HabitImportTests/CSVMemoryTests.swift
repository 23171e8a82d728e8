import CSVDriver
import DriverKit
import Foundation
import HealthGateDaemon
import HealthModel
import HealthPipeline
import HealthStore
import Testing
import TestSupport

/// The generic CSV importer's duplicate check holds a bounded number of ids whatever the file's
/// length, and a duplicate is still never stored twice.
@Suite("Generic CSV: bounded memory") struct CSVMemoryTests {
    static let mappingText = """
        record = "measurement"
        time_column = "time"
        date_format = "unix"
        value_column = "kg"
        name = "weight"
        unit = "kg"
        """

    func mapping() throws -> CSVImporter.Settings.Mapping {
        try #require(try ConfigDecoder.decode(CSVImporter.Settings.self, from: TOMLConfig.parse(Self.mappingText)).mapping)
    }

    /// `rows` weights a minute apart from 2026-01-01, then the rows of `extra` (time offsets in
    /// minutes from the same start, and a value).
    func csv(rows: Int, extra: [(minute: Int, kg: String)] = []) -> [UInt8] {
        let start = 1_767_225_600
        var text = "time,kg\n"
        text.reserveCapacity(rows * 20)
        for i in 0..<rows { text += "\(start + 60 * i),\(70 + i % 10).5\n" }
        for (minute, kg) in extra { text += "\(start + 60 * minute),\(kg)\n" }
        return Array(text.utf8)
    }

    func chunks(_ bytes: [UInt8]) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            var at = 0
            while at < bytes.count {
                continuation.yield(Array(bytes[at..<min(bytes.count, at + 256 * 1024)]))
                at += 256 * 1024
            }
            continuation.finish()
        }
    }

    /// 120,000 rows: the check holds at most its window (65,536 ids), not one id per row (the
    /// old set held 120,001 here); a duplicate 120,000 rows after its first is not an error.
    @Test func theCheckHoldsAtMostItsWindow() async throws {
        let bytes = csv(rows: 120_000, extra: [(0, "99.0")])
        let sink = CollectingSink()
        let stats = try await CSVImporter.decode(file: "big.csv", chunks: { chunks(bytes) }, mapping: try mapping(), into: sink)
        #expect(stats.rows == 120_001)
        #expect(stats.mostIDsHeld == CSVImporter.RecentIDs.defaultCapacity)
        #expect(sink.records.count == 120_001)

        let small = try await CSVImporter.decode(file: "big.csv", chunks: { chunks(bytes) }, mapping: try mapping(), window: 1000,
                                                 into: CollectingSink())
        #expect(small.rows == 120_001 && small.mostIDsHeld == 1000)
    }

    /// Into a real store: the far duplicate is stored once (the first row's value kept), a
    /// near one is still an error naming both lines, nothing stored.
    @Test func duplicatesAreNotStoredTwice() async throws {
        let folder = NSTemporaryDirectory() + "healthgate-csv-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try await HealthStore(path: folder + "/healthgate.sqlite")
        let importer = CSVImporter(settings: CSVImporter.Settings(mapping: try mapping()))
        let pipeline = ImportPipeline(store: store, importers: [importer])

        let far = folder + "/far.csv"
        try Data(csv(rows: 70_000, extra: [(0, "99.0"), (5, "98.0")])).write(to: URL(fileURLWithPath: far))
        let report = await pipeline.importFile(far)
        #expect(report.status == .imported, "\(report)")
        #expect(try await store.tableCounts()["measurements"] == 70_000)
        let first = try await store.measurements(kind: .weight).filter { $0.time == Date(timeIntervalSince1970: 1_767_225_600) }
        #expect(first.map(\.value) == [70.5])

        let near = folder + "/near.csv"
        try Data(csv(rows: 10, extra: [(3, "99.0")])).write(to: URL(fileURLWithPath: near))
        let refused = await pipeline.importFile(near)
        #expect(refused.status == .failed)
        #expect(refused.error?.contains("line 12") == true && refused.error?.contains("the same measurement and time as line 5") == true,
                "\(refused.error ?? "")")
        #expect(try await store.tableCounts()["measurements"] == 70_000)
    }

    /// A file whose records the validation refuses by the hundred: every one counted, the
    /// reasons of the first hundred kept (the report held one string per refusal before, and a
    /// 1 GB Apple export with 622,816 future-dated samples peaked at 293 MB).
    @Test func refusalsAreCountedAndTheFirstHundredKept() async throws {
        let folder = NSTemporaryDirectory() + "healthgate-csv-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try await HealthStore(path: folder + "/healthgate.sqlite")
        let pipeline = ImportPipeline(store: store, importers: [CSVImporter(settings: CSVImporter.Settings(mapping: try mapping()))])
        // 1,000 weights, then 2,500 a few years ahead (future-dated: refused).
        let path = folder + "/future.csv"
        try Data(csv(rows: 1000, extra: (0..<2500).map { (5_000_000 + $0, "71.0") })).write(to: URL(fileURLWithPath: path))
        let report = await pipeline.importFile(path)
        #expect(report.status == .partial && report.records == 1000, "\(report.status) \(report.records)")
        #expect(report.rejectedCount == 2500 && report.rejected.count == Rejections.keptLimit)
        #expect(report.rejected.allSatisfy { $0.contains("future") }, "\(report.rejected.first ?? "")")
        #expect(report.error == "2500 record(s) rejected")
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(json.contains(#""rejected_count":2500"#))
        #expect(try await store.tableCounts()["measurements"] == 1000)

        var tally = Rejections()
        tally.add((0..<60).map { ValidationError(recordID: RecordID.derive("t", String($0)), reason: "r\($0)") })
        tally.add((60..<150).map { ValidationError(recordID: RecordID.derive("t", String($0)), reason: "r\($0)") })
        #expect(tally.count == 150 && tally.kept.map(\.reason) == (0..<100).map { "r\($0)" })
    }

    @Test func recentIDsForgetsTheOldest() {
        var recent = CSVImporter.RecentIDs(capacity: 2)
        let ids = (0..<4).map { RecordID.derive("test", String($0)) }
        #expect(recent.insert(ids[0], line: 1) && recent.insert(ids[1], line: 2))
        #expect(!recent.insert(ids[0], line: 3) && recent.line(of: ids[0]) == 1)
        #expect(recent.insert(ids[2], line: 4) && recent.count == 2)
        #expect(recent.line(of: ids[0]) == nil && recent.insert(ids[0], line: 5))  // forgotten: allowed again
        #expect(recent.line(of: ids[1]) == nil && recent.line(of: ids[2]) == 4)
    }
}
