import BluetoothCentral

/// What the daemon's own-stack driver does about a controller it cannot open: wait for it (and
/// what to say, once), or fail. Pure: `BLERecorder` tries the transport every second and feeds
/// each outcome here.
///
/// - Missing (no such `hciN` or device file) or refused (nothing listening on `tcp:`/`unix:`):
///   wait; said the first time, and again when the reason changes.
/// - Busy (`EBUSY`): wait as well. Right after a missing adapter appears, the kernel holds it
///   for its own setup for a moment and refuses the HCI user channel meanwhile; that is said only
///   when it lasts `setupTries` tries. A busy adapter at the first try (bluetoothd owns it) is
///   said at once, with how to free it.
/// - Anything else (no permission, no Bluetooth in the kernel, an I/O error): fail.
struct ControllerWait {
    enum Step: Equatable {
        /// Give up: the error is not one that waiting mends.
        case fail
        /// Try again in a second; `say` is a warning to log, if any.
        case wait(say: String?)
    }

    /// Tries a busy adapter that has just appeared may take before the wait says so.
    static let setupTries = 5

    private let address: String
    /// The reason last said, nil before any.
    private var said: TransportError.Kind?
    /// Consecutive busy tries after a missing adapter.
    private var busyTries = 0

    init(address: String) { self.address = address }

    /// Whether the driver has been waiting (said so) at all.
    var isWaiting: Bool { said != nil }

    /// The next step after a failed open.
    mutating func failed(_ error: TransportError) -> Step {
        switch error.kind {
        case .notFound, .refused:
            busyTries = 0
            return .wait(say: say(error))
        case .busy:
            busyTries += 1
            if said == .notFound || said == .refused, busyTries < Self.setupTries { return .wait(say: nil) }
            return .wait(say: say(error))
        default:
            return .fail
        }
    }

    /// What to say once the controller opened: its return, when the driver had said it waits.
    func opened() -> String? {
        isWaiting ? "controller \(address) is there" : nil
    }

    private mutating func say(_ error: TransportError) -> String? {
        guard said != error.kind else { return nil }
        said = error.kind
        return "\(error); waiting for the controller"
    }
}
