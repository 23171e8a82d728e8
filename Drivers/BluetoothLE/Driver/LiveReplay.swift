public import BluetoothCentral
import Foundation
import GATTProfiles
public import HealthModel

extension GATTSessionizer {
    /// What a recording would have stored from values received in the past (a btsnoop capture
    /// replayed): each value decoded and fed in order with the time it was received, every
    /// workout completed at the end. Malformed values are counted and skipped, as live.
    ///
    /// The records' identities derive from device and time, so replaying the same capture again
    /// gives the same records (the store keeps them once).
    public static func records(from values: [GATTNotification], configuration: Configuration) -> (batch: LiveBatch, malformed: Int) {
        var sessionizer = GATTSessionizer(configuration: configuration)
        var batch = LiveBatch()
        var malformed = 0
        for value in values {
            guard let uuid = value.characteristic.uint16 else { continue }
            do {
                guard let reading = try GATTProfileDecoder.decode(characteristic: uuid, value.value) else { continue }
                batch += sessionizer.receive(LiveReading(device: value.peer.text, receivedAt: value.receivedAt, reading: reading))
            } catch {
                malformed += 1
            }
        }
        return (batch + sessionizer.finish(), malformed)
    }
}
