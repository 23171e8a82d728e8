import BluetoothCentral
import BLERuntime
import Foundation
import Testing
@testable import BLEDriver

/// When the daemon's own-stack driver waits for its controller, and what it says.
struct ControllerWaitTests {
    let missing = TransportError.hci(index: 0, errno: ENODEV)
    let busy = TransportError.hci(index: 0, errno: EBUSY)

    /// A replugged adapter: missing, then busy for a moment while the kernel sets it up (the
    /// HCI user channel refuses it meanwhile), then open. The driver waits through the busy
    /// tries without a second warning and says the controller is there. (A fresh-clone CI run
    /// failed when the driver gave up on that busy instead.)
    @Test func aReplugWaitsThroughTheKernelsSetup() {
        var wait = ControllerWait(address: "hci0")
        #expect(wait.failed(missing) == .wait(say: "hci0: no such Bluetooth adapter (ENODEV); waiting for the controller"))
        #expect(wait.failed(missing) == .wait(say: nil))
        for _ in 1..<ControllerWait.setupTries { #expect(wait.failed(busy) == .wait(say: nil)) }
        #expect(wait.opened() == "controller hci0 is there")
    }

    /// An adapter that stays busy after it appeared (bluetoothd took it) is said, with how to free it, once.
    @Test func aLastingBusyIsSaidOnce() throws {
        var wait = ControllerWait(address: "hci0")
        _ = wait.failed(missing)
        var said: [String] = []
        for _ in 0..<(ControllerWait.setupTries * 3) {
            guard case .wait(let say) = wait.failed(busy) else {
                Issue.record("a busy adapter ended the wait")
                return
            }
            if let say { said.append(say) }
        }
        #expect(said.count == 1)
        let line = try #require(said.first)
        #expect(line.contains("EBUSY") && line.contains("btmgmt --index 0 power off") && line.hasSuffix("waiting for the controller"))
        // Gone again: said again.
        #expect(wait.failed(missing) == .wait(say: "hci0: no such Bluetooth adapter (ENODEV); waiting for the controller"))
    }

    /// Busy at the first try (bluetoothd owns the adapter) is said at once.
    @Test func busyAtTheStartIsSaidAtOnce() {
        var wait = ControllerWait(address: "hci0")
        guard case .wait(let say) = wait.failed(busy) else {
            Issue.record("a busy adapter ended the wait")
            return
        }
        #expect(say?.contains("EBUSY") == true)
        #expect(wait.opened() == "controller hci0 is there")
    }

    /// Nothing listening on a TCP or Unix address is waited for, said once.
    @Test func aRefusedConnectionIsWaitedFor() {
        var wait = ControllerWait(address: "tcp:127.0.0.1:1")
        let refused = TransportError(.refused, "tcp:127.0.0.1:1: connect: Connection refused (ECONNREFUSED)", errno: ECONNREFUSED)
        #expect(wait.failed(refused) == .wait(say: "tcp:127.0.0.1:1: connect: Connection refused (ECONNREFUSED); waiting for the controller"))
        #expect(wait.failed(refused) == .wait(say: nil))
    }

    /// Errors that waiting does not mend end the wait; an open at once says nothing.
    @Test func otherErrorsFailAndAnOpenAtOnceSaysNothing() {
        var wait = ControllerWait(address: "hci0")
        #expect(wait.opened() == nil)
        #expect(wait.failed(TransportError.hci(index: 0, errno: EPERM)) == .fail)
        #expect(wait.failed(TransportError.hci(index: 0, errno: EAFNOSUPPORT)) == .fail)
        #expect(wait.failed(TransportError(.io, "hci0: Input/output error (errno 5)", errno: EIO)) == .fail)
        #expect(wait.opened() == nil)
    }
}
