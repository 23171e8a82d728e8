import ArgumentParser
import BLEDriver
import BLEHost
import BluetoothCentral
import CommandSupport
import Foundation
import GATTProfiles
import HealthModel
import HealthPipeline

struct BLEReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Print the readings in a Bluetooth capture (btsnoop, pcap or pcapng), as `ble watch` printed them live.",
        discussion: """
            FILE is a btsnoop capture, datalink H4 (1002) or H1 (1001): one written with --snoop, \
            or an HCI snoop log from a phone or adapter; or a pcap or pcapng capture of link type \
            201 (Bluetooth H4 with direction, as Wireshark writes it; records of other \
            link types are skipped and counted). It goes through the same host stack and \
            decoders as a live session, and each notification or indication is printed like \
            `ble watch` prints it, with the time it was captured (--json: one object per line). \
            A summary goes to standard error: links, values per device and characteristic, values \
            on handles the capture never described (it began after discovery), packets that did \
            not decode. A damaged file prints what came before the damage, then the file, the \
            byte offset and the reason, and exits with status 1.

            --record stores the readings in the database (--db) as `healthgate record` would \
            have stored them live: measurements, and one workout per device stream (--gap, \
            --sport and --wheel as for `record`). Replaying the same capture again stores nothing \
            new.
            """)

    @OptionGroup var output: OutputOptions
    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Store the readings in the database, as `healthgate record` would have.")
    var record = false

    @OptionGroup(title: "With --record") var workouts: WorkoutOptions

    @Argument(help: "The capture: btsnoop, pcap or pcapng.")
    var file: String

    func run() async throws {
        let result: CaptureReplay.Result
        var damage: CaptureReplayError?
        do {
            result = try CaptureReplay.replay(file: file)
        } catch {
            guard let partial = error.partial else { throw CommandFailure("\(error)") }
            result = partial
            damage = error
        }
        for reading in Self.readings(result) {
            try BLEWatchCommand.printLine(BLEWatchCommand.describe(reading), json: output.json)
        }
        if record { try await store(result) }
        // Damage in the file header leaves nothing to summarize.
        if result.format != nil { CommandOutput.stderr(Self.summary(result, file: file)) }
        if let damage {
            CommandOutput.stderr("healthgate: \(file): \(damage)\n")
            throw ExitCode(1)
        }
    }

    /// Stores what a live recording would have stored from the capture's values (reads such as
    /// Battery Level included, as live).
    private func store(_ result: CaptureReplay.Result) async throws {
        let (batch, malformed) = GATTSessionizer.records(from: result.values.compactMap(\.notification),
                                                         configuration: workouts.sessionizer)
        let (written, accepted, rejected) = try await Intake(store: try await database.open()).write(batch)
        let completed = accepted.workouts.filter(\.isFinal).count
        CommandOutput.stderr("stored into \(database.db): \(written.inserted) new record(s) (\(completed) workout(s), "
                      + "\(accepted.records.count) measurement(s) in the capture; \(written.unchanged) already stored)"
                      + (malformed > 0 ? ", \(malformed) malformed value(s) skipped" : "")
                      + (rejected.isEmpty ? "" : ", \(rejected.count) rejected: " + rejected.map(\.description).joined(separator: "; "))
                      + "\n")
    }

    /// The readings of a capture in capture order, as a live session delivers them: the
    /// notifications and indications whose device and characteristic the capture shows.
    static func readings(_ result: CaptureReplay.Result) -> [GATTNotification] {
        result.notifications
    }

    /// What the capture held: links, values per device and characteristic, what was not understood.
    static func summary(_ result: CaptureReplay.Result, file: String) -> String {
        let s = result.statistics
        let format = result.format?.description ?? "unknown format"
        var out = "\((file as NSString).lastPathComponent): \(CommandOutput.count(s.records, "record")) (\(format))"
        if let first = result.firstRecordAt, let last = result.lastRecordAt {
            out += ", \(ISO8601.string(first)) to \(ISO8601.string(last))"
        }
        out += "\n\(CommandOutput.count(s.connections, "connection")), \(CommandOutput.count(s.notifications, "notification")), "
            + "\(CommandOutput.count(s.indications, "indication")), \(CommandOutput.count(s.reads, "read")); "
            + "\(CommandOutput.count(s.valuesOnUnknownHandles, "value")) on unknown handles, \(CommandOutput.count(s.decodeErrors, "decode error"))\n"
        for (index, connection) in result.connections.enumerated() {
            let who = connection.peer?.description ?? "unknown device (connected before the capture began)"
            out += "  \(who), link 0x\(hex(connection.handle, 4))"
            if let reason = connection.disconnectReason { out += ", disconnected (reason \(reason))" }
            out += "\n"
            // Values per characteristic (or per handle when the characteristic is unknown), in order of appearance.
            var order: [String] = []
            var counts: [String: [CaptureReplay.ValueKind: Int]] = [:]
            for value in result.values where value.connection == index {
                let key = value.characteristic.map(characteristicName)
                    ?? "handle 0x\(hex(value.valueHandle, 4)) (characteristic unknown)"
                if counts[key] == nil { order.append(key) }
                counts[key, default: [:]][value.kind, default: 0] += 1
            }
            for key in order {
                let kinds = [CaptureReplay.ValueKind.notification, .indication, .read].compactMap { kind in
                    counts[key]?[kind].map { CommandOutput.count($0, kind.rawValue) }
                }
                out += "    \(key): \(kinds.joined(separator: ", "))\n"
            }
        }
        if s.valuesWithoutPeer > 0 {
            out += "\(CommandOutput.count(s.valuesWithoutPeer, "value")) on links whose connection is not in the capture (no device address)\n"
        }
        if s.truncatedRecords > 0 { out += "\(CommandOutput.count(s.truncatedRecords, "record")) cut short by the capture writer (skipped)\n" }
        if s.droppedByWriter > 0 { out += "the capture writer reports \(CommandOutput.count(Int(s.droppedByWriter), "dropped packet"))\n" }
        for problem in result.problems { out += "  \(problem)\n" }
        // The problems are decode problems, and one line about skipped records when there were any.
        let decodeProblems = result.problems.count - (s.skippedRecords > 0 ? 1 : 0)
        if s.decodeErrors > decodeProblems { out += "  ... and \(s.decodeErrors - decodeProblems) more\n" }
        return out
    }

    private static func characteristicName(_ uuid: BluetoothUUID) -> String {
        guard let short = uuid.uint16 else { return uuid.description }
        return GATTNames.characteristic(short).map { "\($0) (\(hex(short, 4)))" } ?? hex(short, 4)
    }

    private static func hex(_ value: UInt16, _ width: Int) -> String {
        String(format: "%0\(width)X", value)
    }

}
