import DriverKit
import Foundation
import Testing
@testable import HealthGateDaemon

/// A driver that waits for something outside it (its controller, bluetoothd) shows so in
/// `healthgate status` and the systemd status line, and running again once it works.
struct DaemonStateTests {
    @Test func aWaitingDriverShowsWhyAndThenRunningAgain() async {
        let state = DaemonState(database: "test", server: nil)
        await state.driver("strap", type: "ble", .running)
        await state.driver("inbox", type: "watch_folder", .running)
        #expect(await state.statusLine() == "2/2 drivers running")

        let why = "hci0: no such Bluetooth adapter (ENODEV); waiting for the controller"
        await state.driver("strap", waiting: why)
        var strap = await state.current().drivers.first { $0.name == "strap" }
        #expect(strap?.state == .waiting && strap?.detail == why && strap?.type == "ble")
        #expect(await state.statusLine() == "1/2 drivers running, 1 waiting")

        await state.driver("strap", waiting: nil)
        strap = await state.current().drivers.first { $0.name == "strap" }
        #expect(strap?.state == .running && strap?.detail == nil)
        #expect(await state.statusLine() == "2/2 drivers running")
    }

    /// A report that comes after the driver stopped (or while it restarts) changes nothing; an
    /// "it works" from a driver that was not waiting neither.
    @Test func lateReportsDoNotChangeADriverThatIsNotRunning() async {
        let state = DaemonState(database: "test", server: nil)
        await state.driver("strap", type: "ble", .restarting, detail: "transport closed")
        await state.driver("strap", waiting: "bluetoothd is not running; waiting")
        var strap = await state.current().drivers.first
        #expect(strap?.state == .restarting && strap?.detail == "transport closed")

        await state.driver("strap", type: "ble", .running)
        await state.driver("strap", waiting: nil)
        strap = await state.current().drivers.first
        #expect(strap?.state == .running && strap?.detail == nil)
        await state.driver("nobody", waiting: "anything")
        #expect(await state.current().drivers.count == 1)
    }
}
