public import BluetoothCentral
import BLEBlueZ
public import BLERuntime
import Foundation

/// The one way to open the controller a `BLEController` names, for the recorder (the daemon's
/// `ble` driver, `healthgate record`) and the `ble` commands alike: this is the only place that
/// knows both backends.
public enum Controllers {
    public struct Options: Sendable {
        /// A btsnoop capture of the controller link (the own host stack only).
        public var snoopPath: String?
        /// Wait for a controller that is not there yet, refuses or is busy (the own host stack,
        /// tried every second), or for an adapter that is missing or powered off (BlueZ), instead
        /// of failing. The daemon waits; a command fails at once.
        public var waitForController = false
        /// BlueZ: discovery filtered to these services (nil: every device).
        public var discoveryServices: [BluetoothUUID]?
        /// The backend's diagnostics (connection attempts given up, D-Bus calls that failed).
        public var log: (@Sendable (String) -> Void)?
        /// The controller or adapter gone (`trouble`), waited for, or back.
        public var onChange: (@Sendable (_ message: String, _ trouble: Bool) -> Void)?

        public init() {}
    }

    /// A central opened and ready, and what it is.
    public struct Opened: Sendable {
        public enum Ready: Sendable, Equatable {
            /// The own host stack initialized the controller.
            case controller(ControllerInfo)
            /// BlueZ's adapter at this object path.
            case adapter(String)
        }

        public var central: any BLECentral
        public var ready: Ready
    }

    /// Decides `auto` on this machine (`BLEController.resolved(bluezRunning:adapters:)`): asks the
    /// system bus whether bluetoothd runs, and lists the kernel's adapters.
    public static func resolve(_ controller: BLEController) async throws(BLEError) -> BLEController {
        guard controller == .auto else { return controller }
        let running = await BlueZCentral.isRunning()
        guard let resolved = controller.resolved(bluezRunning: running, adapters: kernelAdapters()) else {
            throw .bluez("bluetoothd is not running (org.bluez has no owner on the system bus) and the kernel lists no Bluetooth adapter")
        }
        return resolved
    }

    /// The kernel's Bluetooth adapters (`hci0`, ...), from sysfs: a folder listing works on a
    /// kernel without Bluetooth too, where a Bluetooth socket for libbluetooth's device list
    /// (HCIGETDEVLIST) cannot even be opened.
    static func kernelAdapters() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? []
    }

    /// Resolves `controller`, opens it and makes it ready. The caller closes `central`.
    public static func open(_ controller: BLEController, _ options: Options) async throws -> Opened {
        switch try await resolve(controller) {
        case .host(let address):
            var configuration = HostRuntime.Configuration()
            configuration.snoopPath = options.snoopPath
            configuration.log = options.log
            let runtime = try await openHost(address, configuration, options)
            do {
                return Opened(central: runtime, ready: .controller(try await runtime.start()))
            } catch {
                await runtime.close()
                throw error
            }
        case .bluez(let adapter):
            guard options.snoopPath == nil else {
                throw BLEError.bluez("a btsnoop capture needs the own host stack (with BlueZ use btmon)")
            }
            var configuration = BlueZCentral.Configuration(adapter: adapter)
            configuration.discoveryServices = options.discoveryServices
            configuration.waitUntilUsable = options.waitForController
            configuration.log = options.log
            configuration.onChange = options.onChange
            let central = try await BlueZCentral.open(configuration)
            return Opened(central: central, ready: .adapter(central.adapterPath))
        case .auto:
            throw BLEError.bluez("auto: no backend")  // resolve decides auto
        }
    }

    /// Opens the own stack's transport; with `waitForController`, while the controller is not
    /// there, refuses the connection or is busy, tried again every second until cancelled
    /// (`ControllerWait` says when and what to say, through `onChange`).
    private static func openHost(_ address: TransportAddress, _ configuration: HostRuntime.Configuration,
                                 _ options: Options) async throws -> HostRuntime {
        var wait = ControllerWait(address: "\(address)")
        while true {
            let opened: Result<HostRuntime, BLEError> = Result { () throws(BLEError) in
                try HostRuntime.open(address, configuration: configuration)
            }
            switch opened {
            case .success(let runtime):
                if let message = wait.opened() { options.onChange?(message, false) }
                return runtime
            case .failure(let error):
                guard options.waitForController, case .transport(let cause) = error,
                      case .wait(let say) = wait.failed(cause) else { throw error }
                if let say { options.onChange?(say, true) }
            }
            try await Task.sleep(for: .seconds(1))
        }
    }
}
