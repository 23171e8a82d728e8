import Foundation
import Testing
import TestSupport

/// The daemon with the statement check on (`HEALTHGATE_STATEMENT_CHECK=1`): a file dropped into its
/// watch folder is imported, and as it exits the daemon says how many statements it checked; none
/// ran on Swift's cooperative pool.
@Suite struct DaemonPoolTests {
    @Test func anImportInTheDaemonRunsOffThePool() async throws {
        let folder = try temporaryFolder("daemon-pool")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/healthgate.toml"
        try """
            [drivers.inbox]
            type = "watch_folder"
            path = "\(folder)/inbox"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(folder: folder, arguments: ["--config", config],
                                       environment: ["HEALTHGATE_STATEMENT_CHECK": "1"])
        #expect(await daemon.notify.waitFor("READY=1") != nil, "\(daemon.log)")
        try FileManager.default.copyItem(atPath: PackagePaths.fixtures + "/fit/garmin-fenix5-run.fit", toPath: folder + "/inbox/run.fit")
        #expect(await cameTrue { FileManager.default.fileExists(atPath: folder + "/inbox/imported/run.fit") }, "not imported: \(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit() == 0, "\(daemon.log)")
        let summary = daemon.log.split(separator: "\n").last { $0.hasPrefix("statement check: ") }
        let figures = summary.map { $0.split(separator: " ").compactMap { Int($0) } } ?? []
        #expect(figures.count == 2 && figures[0] > 100 && figures[1] == 0, "\(daemon.log)")
    }
}
