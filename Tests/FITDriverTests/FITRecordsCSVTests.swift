import Foundation
import Testing
@testable import FITDriver

/// Compares decoded `record` messages value by value with the `*-records.csv` files
/// (expected values from python-fitparse's test suite).
@Suite struct FITRecordsCSVTests {
    /// One record message's values by field name (scaled), for comparison.
    struct RecordGrabber: FITVisitor {
        var rows: [(timestamp: UInt32?, values: [String: Double])] = []
        mutating func message(_ m: FITMessage) throws {
            // Records holding only a timestamp are not in the CSVs.
            guard m.globalNumber == 20, m.fieldCount > 1 else { return }
            var values: [String: Double] = [:]
            for i in 0..<m.fieldCount {
                let f = m.field(at: i)
                let name = m.name(of: f)
                if values[name] == nil, let v = m.values(of: f).first, !v.isNaN { values[name] = v }
            }
            rows.append((m.timestamp, values))
        }
    }

    func rows(_ csv: String) throws -> [[String]] {
        let text = try String(contentsOf: Fixtures.fit.appendingPathComponent(csv), encoding: .utf8)
        // Some files end lines with CRLF, which Swift reads as one Character: split on scalars.
        let lines = text.unicodeScalars.split { $0 == "\n" || $0 == "\r" }.map { String(String.UnicodeScalarView($0)) }
        return lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    func decodeRecords(_ fit: String) throws -> [(timestamp: UInt32?, values: [String: Double])] {
        var grabber = RecordGrabber()
        try FITDecoder.decode(Fixtures.data(fit), into: &grabber)
        return grabber.rows
    }

    @Test("Garmin records match python-fitparse", arguments: [
        ("garmin-edge820-bike.fit", "garmin-edge820-bike-records.csv"),
        ("garmin-fenix5-run.fit", "garmin-fenix5-run-records.csv"),
    ])
    func garminRecords(_ fit: String, _ csv: String) throws {
        let expected = try rows(csv)
        let decoded = try decodeRecords(fit)
        #expect(decoded.count == expected.count)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: -7 * 3600)
        formatter.dateFormat = "EEE MMM dd HH:mm:ss 'PDT' yyyy"
        let columns = ["heart_rate", "cadence", "speed", "distance", "position_lat", "position_long", "altitude", "temperature"]
        for (row, record) in zip(expected, decoded) {
            let time = try #require(record.timestamp)
            #expect(formatter.string(from: FITNormalizer.date(time)) == row[0])
            for (index, name) in columns.enumerated() {
                let want = Double(row[index + 1])
                var got = record.values[name]
                if name == "speed" { got = record.values["enhanced_speed"] ?? got }
                if name == "altitude" { got = record.values["enhanced_altitude"] ?? got }
                #expect(abs((got ?? .nan) - (want ?? .nan)) < 1e-6, "\(fit) \(row[0]) \(name): \(String(describing: got)) vs \(row[index + 1])")
            }
        }
    }

    /// Compressed-timestamp headers and compressed_speed_distance (accumulated distance).
    @Test func compressedSpeedDistanceRecords() throws {
        let expected = try rows("garmin-fr70-run-compressed-timestamps-records.csv")
        let decoded = try decodeRecords("garmin-fr70-run-compressed-timestamps.fit")
        #expect(decoded.count == expected.count)
        for (row, record) in zip(expected, decoded) {
            #expect(record.timestamp == UInt32(row[0]))
            #expect(record.values["heart_rate"] == Double(row[1]))
            #expect(abs((record.values["speed"] ?? .nan) - Double(row[2])!) < 1e-9, "\(row)")
            #expect(abs((record.values["distance"] ?? .nan) - Double(row[3])!) < 1e-9, "\(row)")
            #expect(record.values["cadence"] == Double(row[4]), "\(row)")
        }
    }
}
