public import BluetoothCentral
import Foundation
import GATTProfiles

/// Which devices the BLE driver records: `auto` (any heart-rate sensor), an address
/// (`AA:BB:CC:DD:EE:FF`), a service (`service:1816`) or an advertised name, where `*` and `?`
/// are wildcards (`"Polar H10*"`); names compare without regard to case.
public enum DeviceSelector: Sendable, Hashable, CustomStringConvertible {
    case auto
    case address(DeviceAddress)
    case service(BluetoothUUID)
    case name(String)

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Parses one selector as written on the command line or in the configuration.
    public init(parsing text: String) throws(ParseError) {
        let t = text.trimmingCharacters(in: .whitespaces)
        guard !t.isEmpty else { throw ParseError(description: "empty device selector") }
        if t.lowercased() == "auto" {
            self = .auto
        } else if let address = DeviceAddress(t) {
            self = .address(address)
        } else if t.lowercased().hasPrefix("service:") {
            let value = String(t.dropFirst("service:".count))
            guard let uuid = BluetoothUUID(value) else {
                throw ParseError(description: "'\(value)' is not a service UUID (e.g. service:180D or a 128-bit UUID)")
            }
            self = .service(uuid)
        } else {
            self = .name(t)
        }
    }

    /// True when the selector picks this device out of a scan.
    public func matches(_ device: DiscoveredDevice) -> Bool {
        switch self {
        case .auto: device.serviceUUIDs.contains(BluetoothUUID(GATTProfiles.GATTService.heartRate))
        case .address(let a): device.address.value == a.value
        case .service(let uuid): device.serviceUUIDs.contains(uuid)
        case .name(let pattern): device.name.map { Self.glob(pattern.lowercased(), $0.lowercased()) } ?? false
        }
    }

    /// True when the selector can match more than one device, so scanning goes on after a match.
    public var isOpenEnded: Bool {
        switch self {
        case .auto, .service: true
        case .address: false
        case .name(let pattern): pattern.contains("*") || pattern.contains("?")
        }
    }

    /// The services a discovery filter may be limited to when every selector names services
    /// (`auto`: Heart Rate; `service:UUID`); nil when one picks devices by address or name.
    public static func discoveryServices(_ selectors: [DeviceSelector]) -> [BluetoothUUID]? {
        var services: [BluetoothUUID] = []
        for selector in selectors {
            switch selector {
            case .auto: services.append(BluetoothUUID(GATTProfiles.GATTService.heartRate))
            case .service(let uuid): services.append(uuid)
            case .address, .name: return nil
            }
        }
        return services
    }

    public var description: String {
        switch self {
        case .auto: "auto"
        case .address(let a): a.text
        case .service(let uuid): "service:" + (uuid.uint16.map { String($0, radix: 16, uppercase: true) } ?? uuid.description)
        case .name(let n): n
        }
    }

    /// `*` any run of characters, `?` one character.
    static func glob(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern), t = Array(text)
        var pi = 0, ti = 0, star = -1, mark = 0
        while ti < t.count {
            if pi < p.count, p[pi] == "?" || p[pi] == t[ti] {
                pi += 1; ti += 1
            } else if pi < p.count, p[pi] == "*" {
                star = pi; mark = ti; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; ti = mark
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
