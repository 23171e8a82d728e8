import AppleHealthDriver
import DriverKit
import Foundation
import HealthModel
import HealthStore
import TestSupport
import XMLStream

/// Apple Health end to end into a fresh database, on a synthetic export (Drivers/AppleHealth/
/// tools/make-export.py, `--size` MB), next to the same bytes read by XMLStream alone (the floor)
/// and imported by `healthkit-to-sqlite` (PyPI, the independent baseline), all in this run. Each
/// is a child process: its peak RSS is the kernel's high-water mark (VmHWM). The split
/// comes from three more children that stop earlier: XML only, XML + the Apple Health parser,
/// + the normalizer; the import minus the last is hashing and writing.
func appleBenchmarks(export: String?, sizeMB: Int, baselineMB: Int?) async throws {
    print("\n== Apple Health import (synthetic export, each tool a child process; peak RSS from /proc VmHWM) ==")
    let folder = NSTemporaryDirectory() + "healthgate-bench-apple-\(getpid())"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let file: String
    if let export {
        file = export
    } else {
        file = folder + "/export.xml"
        let script = "Drivers/AppleHealth/tools/make-export.py"
        guard FileManager.default.fileExists(atPath: script) else {
            print("  \(script) not found: run from the package folder"); exit(66)
        }
        let t0 = now()
        let made = try await Tool.run("/usr/bin/env", ["python3", script, file, "--size", String(sizeMB), "--inline-routes", "--legal-only"])
        guard made.status == 0 else { print("  make-export.py failed: \(made.stderr)"); exit(1) }
        print(String(format: "  generated in %.0f s", now() - t0))
    }
    let bytes = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
    let mb = Double(bytes) / 1e6
    print(String(format: "  file: %@ (%.1f MB)", file, mb))
    let me = URL(fileURLWithPath: CommandLine.arguments[0]).path
    let healthgate = Tool.path("healthgate")

    struct Row {
        var name: String
        var seconds: Double
        var peakKB: Int
        var output: String
    }
    func run(_ name: String, _ argv: [String]) throws -> Row {
        let out = folder + "/out-\(name.filter(\.isLetter))"
        let (status, seconds, peakKB) = try spawnMeasured(argv, stdout: out, stderr: out + ".err")
        let output = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let err = (try? String(contentsOfFile: out + ".err", encoding: .utf8)) ?? ""
            print("  \(name) failed (status \(status)): \(err.suffix(2000))"); exit(1)
        }
        return Row(name: name, seconds: seconds, peakKB: peakKB, output: output)
    }

    let xml = try run("xml", [me, "apple-stage", "xml", file])
    let elements = Int(xml.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    let parse = try run("parse", [me, "apple-stage", "parse", file])
    let normalize = try run("normalize", [me, "apple-stage", "normalize", file])
    let database = folder + "/healthgate.sqlite"
    let full = try run("import", [healthgate, "import", file, "--db", database])
    let store = try await HealthStore(path: database)
    let stored = try await store.tableCounts().filter { ["measurements", "habit_events", "sleep_sessions", "workouts"].contains($0.key) }
        .values.reduce(0, +)
    let samples = try await store.tableCounts()["samples"] ?? 0
    // healthkit-to-sqlite reads about 0.5 MB/s: with --baseline-mb it reads the export's first
    // megabytes only (cut before a top-level element, the root closed), its rate over those.
    var baselineFile = file, baselineElements = elements, baselineMBs = mb
    if let baselineMB, Double(baselineMB) < mb {
        baselineFile = folder + "/prefix.xml"
        try writePrefix(of: file, megabytes: baselineMB, to: baselineFile)
        let counted = try run("xml-prefix", [me, "apple-stage", "xml", baselineFile])
        baselineElements = Int(counted.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        baselineMBs = Double((try FileManager.default.attributesOfItem(atPath: baselineFile)[.size] as? Int) ?? 0) / 1e6
    }
    let baseline: Row? = (try? run("healthkit-to-sqlite", ["/usr/bin/env", "healthkit-to-sqlite", "--xml", "--silent", baselineFile, folder + "/hk.sqlite"]))

    print("  \(elements) top-level elements (Record, Correlation, Workout, ActivitySummary) in the file; rates below are over them")
    print("  healthgate stored \(stored) records and \(samples) route samples")
    print("  " + "what".padding(toLength: 36, withPad: " ", startingAt: 0) + "  seconds   records/s      MB/s   peak RSS")
    func line(_ title: String, _ row: Row, elements: Int = elements, mb: Double = mb) {
        print("  " + title.padding(toLength: 36, withPad: " ", startingAt: 0)
            + String(format: " %8.1f %11.0f %9.1f %7.1f MB", row.seconds, Double(elements) / row.seconds, mb / row.seconds, Double(row.peakKB) / 1024))
    }
    line("XMLStream alone (the floor)", xml)
    line("+ Apple Health parser (records)", parse)
    line("+ normalizer", normalize)
    line("healthgate import (end to end)", full)
    if let baseline {
        line("healthkit-to-sqlite (baseline)", baseline, elements: baselineElements, mb: baselineMBs)
        if baselineFile != file {
            print(String(format: "    (healthkit-to-sqlite read the first %.1f MB, %d elements, of the same file)", baselineMBs, baselineElements))
        }
    } else {
        print("  baseline healthkit-to-sqlite: not available (pip install -r requirements-test.txt)")
    }
    let parseShare = xml.seconds / full.seconds, mapShare = max(0, parse.seconds - xml.seconds) / full.seconds
    let normShare = max(0, normalize.seconds - parse.seconds) / full.seconds
    print(String(format: "  split of the import: XML %.0f%%, mapping to records %.0f%%, normalizing %.0f%%, hashing + writing %.0f%%",
                 parseShare * 100, mapShare * 100, normShare * 100, max(0, 1 - parseShare - mapShare - normShare) * 100))
    if let baseline {
        let ratio = (Double(elements) / full.seconds) / (Double(baselineElements) / baseline.seconds)
        print(String(format: "  healthgate's rate is %.1fx healthkit-to-sqlite's (records/s; target >= 10x)", ratio))
    }
    print(String(format: "  healthgate takes %.2fx the XML floor's time (target <= 2x); peak RSS %.1f MB (target < 100 MB)",
                 full.seconds / xml.seconds, Double(full.peakKB) / 1024))
}

/// The child side of ``appleBenchmarks``: `healthgate-bench apple-stage xml|parse|normalize FILE`
/// reads FILE as the importer does and stops after the named stage; prints what it counted.
func appleStage(_ stage: String, _ path: String) async throws {
    let source = try await ImportSource.open(path)
    switch stage {
    case "xml":
        var counter = ElementCounter()
        let reader = XMLReader(skipsWhitespaceText: true)
        for try await chunk in source.chunks() {
            reader.append(chunk)
            _ = try reader.read(into: &counter)
        }
        reader.finishInput()
        _ = try reader.read(into: &counter)
        print(counter.topLevel)
    case "parse", "normalize":
        let sink = StageSink(normalizer: stage == "normalize" ? Normalizer() : nil)
        try await AppleHealthImporter().importFile(source, into: sink)
        print(await sink.count)
    default:
        FileHandle.standardError.write(Data("apple-stage: xml, parse or normalize\n".utf8))
        exit(64)
    }
}

/// Counts the elements one level under the root (the export's records), nothing else.
private struct ElementCounter: XMLEventHandler {
    var depth = 0
    var topLevel = 0
    mutating func handle(_ event: XMLEvent, at location: XMLLocation) throws {
        switch event {
        case .startElement(let name, _):
            depth += 1
            if depth == 2, name.local != "ExportDate", name.local != "Me" { topLevel += 1 }
        case .endElement: depth -= 1
        case .text: break
        }
    }
}

/// Takes what the importer hands over: counts it, normalizes it when asked, keeps nothing.
private actor StageSink: RecordSink {
    let normalizer: Normalizer?
    var count = 0
    init(normalizer: Normalizer?) { self.normalizer = normalizer }
    func emit(_ batch: [HealthRecord]) async throws {
        if let normalizer { count += normalizer.normalize(batch).accepted.count } else { count += batch.count }
    }
    func emit(_ batch: LiveBatch) async throws { count += batch.records.count }
}

/// Runs `argv` (the first element found on PATH or given as a path) with its standard output and
/// error in files; waits for it. Its exit status, wall-clock seconds and peak RSS (KiB, from
/// its /proc status' VmHWM, sampled).
func spawnMeasured(_ argv: [String], stdout: String, stderr: String) throws -> (status: Int32, seconds: Double, peakKB: Int) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let arguments = argv.map { strdup($0) } + [nil]
    defer { for a in arguments { free(a) } }
    var pid: pid_t = 0
    let t0 = now()
    let spawned = posix_spawnp(&pid, argv[0], &actions, nil, arguments, environ)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .ENOENT) }
    // The child's peak RSS: VmHWM in /proc/PID/status, read every 20 ms until it exits (the
    // high-water mark only grows; a rise in the last 20 ms could be missed). Not wait4's
    // ru_maxrss: a child started with vfork (posix_spawn) inherits the parent's high-water mark.
    var status: Int32 = 0
    var peakKB = 0
    while true {
        let done = waitpid(pid, &status, WNOHANG)
        if done == pid { break }
        if done < 0, errno != EINTR { break }
        if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kb = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        {
            peakKB = max(peakKB, kb)
        }
        usleep(20_000)
    }
    let seconds = now() - t0
    let exited = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return (exited, seconds, peakKB)
}

/// Writes the first `megabytes` MB of the export at `path` to `out`, cut before the next
/// top-level element (a line starting with one space and `<`, as make-export.py writes them), and
/// closes the root: a smaller valid export with the same records at its start.
func writePrefix(of path: String, megabytes: Int, to out: String) throws {
    guard let input = FileHandle(forReadingAtPath: path) else { throw POSIXError(.ENOENT) }
    defer { try? input.close() }
    _ = FileManager.default.createFile(atPath: out, contents: nil)
    guard let output = FileHandle(forWritingAtPath: out) else { throw POSIXError(.EACCES) }
    defer { try? output.close() }
    let limit = megabytes * 1_000_000
    var written = 0
    while true {
        let chunk = input.readData(ofLength: 1 << 20)
        if chunk.isEmpty { break }
        if written + chunk.count < limit {
            output.write(chunk)
            written += chunk.count
            continue
        }
        let bytes = [UInt8](chunk)
        var cut = max(0, limit - written)
        while cut + 2 < bytes.count, !(bytes[cut] == 0x0A && bytes[cut + 1] == 0x20 && bytes[cut + 2] == 0x3C && (cut + 3 >= bytes.count || bytes[cut + 3] != 0x2F)) {
            cut += 1
        }
        output.write(Data(bytes[..<(cut + 1)]))
        break
    }
    output.write(Data("</HealthData>\n".utf8))
}
