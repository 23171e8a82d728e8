import Foundation
import Testing
import TestSupport
import USBKit

/// Naming the program that holds a device: the real /proc of this machine.
@Suite struct DeviceNodeHoldersTests {
    @Test("a process holding a file open is found by its pid and command; nobody holds a file nobody opened")
    func findsTheHolder() async throws {
        let folder = try temporaryFolder("holders")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let held = folder + "/node", free = folder + "/other"
        FileManager.default.createFile(atPath: held, contents: Data())
        FileManager.default.createFile(atPath: free, contents: Data())
        // Another process (sleep, started through a shell that keeps the file open on fd 3).
        let holder = ChildProcess()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", "exec 3<\"$0\"; exec sleep 30", held]
        try holder.run()
        defer { holder.terminate() }
        // The shell opens the file, then becomes sleep (same pid): until it has, it is `sh` (a
        // loaded run saw that), so the wait is for the holder to be the sleep.
        var found: [DeviceNodeHolders.Holder] = []
        try await eventually("the sleep holds the file", detail: "found \(found)") {
            found = DeviceNodeHolders.holders(of: held)
            return found.first?.command == "sleep"
        }
        #expect(found == [DeviceNodeHolders.Holder(pid: holder.processIdentifier, command: "sleep")])
        #expect(found.first?.description == "sleep (pid \(holder.processIdentifier))")
        #expect(DeviceNodeHolders.holders(of: free).isEmpty)
        // This process is left out unless asked for.
        let mine = try FileHandle(forReadingFrom: URL(fileURLWithPath: free))
        defer { try? mine.close() }
        #expect(DeviceNodeHolders.holders(of: free).isEmpty)
        #expect(DeviceNodeHolders.holders(of: free, excluding: -1).map(\.pid) == [getpid()])
    }

    @Test("a busy device's error names its holders, else the usual suspects")
    func busyError() {
        var error = USBError("claim interface 0", code: -6)
        #expect(error.isBusy && error.description.contains("Garmin Express or ANT Agent"))
        error.heldBy = ["python3 (pid 412)"]
        #expect(error.description == "claim interface 0: LIBUSB_ERROR_BUSY (another program holds it: python3 (pid 412): stop that program)")
        #expect(DeviceNodeHolders.node(bus: 1, address: 5) == "/dev/bus/usb/001/005")
    }
}
