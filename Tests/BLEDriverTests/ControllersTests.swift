import BLEBlueZ
@testable import BLEDriver
import BluetoothCentral
import Foundation
import Testing

/// `Controllers`: the one way the recorder and the `ble` commands open a backend.
struct ControllersTests {
    /// On this machine (no system bus, no kernel Bluetooth) auto has nothing to pick: the error
    /// says why, without hanging. Where there is a backend, auto picks what the pure rule says.
    @Test func autoWithoutBlueZOrAdaptersIsExplained() async throws {
        let running = await BlueZCentral.isRunning()
        let expected = BLEController.auto.resolved(bluezRunning: running, adapters: Controllers.kernelAdapters())
        do {
            let controller = try await Controllers.resolve(.auto)
            #expect(controller == expected)
        } catch {
            #expect(expected == nil)
            #expect(error.description.contains("bluetoothd is not running") && error.description.contains("no Bluetooth adapter"))
        }
    }

    /// A btsnoop capture records the own stack's controller link: asked of BlueZ, opening says so
    /// before it touches the bus.
    @Test func aCaptureWithBlueZIsRefused() async throws {
        var options = Controllers.Options()
        options.snoopPath = "/nonexistent/capture.btsnoop"
        options.discoveryServices = nil
        await #expect(throws: BLEError.bluez("a btsnoop capture needs the own host stack (with BlueZ use btmon)")) {
            _ = try await Controllers.open(.bluez(adapter: nil), options)
        }
    }

    /// A controller that is not there fails at once when the caller does not wait (a command),
    /// with the transport's own error.
    @Test func aMissingControllerFailsAtOnceWithoutWaiting() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("healthgate-no-controller-\(getpid()).sock").path
        do {
            _ = try await Controllers.open(.host(.unix(path: path)), Controllers.Options())
            Issue.record("opened a controller that does not exist")
        } catch let error as BLEError {
            guard case .transport(let cause) = error else { Issue.record("expected a transport error, got \(error)"); return }
            #expect(cause.kind == .notFound)
            #expect(cause.message.hasPrefix("unix:\(path)"))
        }
    }
}
