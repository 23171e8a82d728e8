import Foundation
import HealthModel

/// What the daemon says about itself, for the today page: its drivers with the devices connected
/// now, and the last sync. The daemon gives it (``DashboardServer/application(store:listen:access:timeZone:now:status:onStored:onListening:logger:)``);
/// `healthgate dashboard` on a database alone has none.
public struct DashboardStatus: Sendable, Equatable {
    public struct Driver: Sendable, Equatable {
        public var name: String
        public var type: String
        /// `running`, `waiting`, `restarting`, ...
        public var state: String
        public var devices: [String]
        public var detail: String?

        public init(name: String, type: String, state: String, devices: [String], detail: String?) {
            self.name = name
            self.type = type
            self.state = state
            self.devices = devices
            self.detail = detail
        }
    }

    public var drivers: [Driver]
    /// ISO 8601.
    public var lastSyncAt: String?
    public var lastSyncError: String?
    /// The tracking server's URL, nil when none is configured.
    public var server: String?

    public init(drivers: [Driver], lastSyncAt: String?, lastSyncError: String?, server: String?) {
        self.drivers = drivers
        self.lastSyncAt = lastSyncAt
        self.lastSyncError = lastSyncError
        self.server = server
    }
}

extension Pages {
    /// The today page's card on the box itself: devices, the outbox, the last sync.
    static func systemCard(_ status: DashboardStatus?, outbox: Int, refused: Int, boundary: DayBoundary) -> String {
        var text = "<p data-field=\"outbox\" data-value=\"\(outbox)\">\(count(outbox, "record")) waiting to be sent</p>"
        if refused > 0 {
            text += "<p data-field=\"refused\" data-value=\"\(refused)\">\(count(refused, "record")) refused by the server "
                + "(<code>healthgate outbox</code>)</p>"
        }
        guard let status else {
            return card("This box", text + "<p class=\"muted\">Devices and sync are the daemon's: this page is served from the database alone.</p>",
                        attributes: liveAttributes)
        }
        if let error = status.lastSyncError {
            text += "<p class=\"problem\" data-field=\"sync-failing\">Sync failing: \(HTML.escape(DisplayText.safe(error, limit: 200)))</p>"
        } else if let at = status.lastSyncAt.flatMap(ISO8601.parse) {
            text += "<p>Last sync <time datetime=\"\(ISO8601.string(at))\">\(localTime(at, boundary))</time></p>"
        } else {
            text += "<p>\(status.server == nil ? "No server configured" : "Not synced yet")</p>"
        }
        let connected = status.drivers.reduce(0) { $0 + $1.devices.count }
        var rows = ""
        for d in status.drivers {
            let devices = d.devices.isEmpty ? "" : ": " + d.devices.map { HTML.escape(DisplayText.safe($0, limit: 60)) }.joined(separator: ", ")
            rows += "<li data-driver=\"\(HTML.escape(d.name))\">\(HTML.escape(d.name)) (\(HTML.escape(d.type))) \(HTML.escape(d.state))\(devices)"
                + (d.detail.map { " <span class=\"muted\">\(HTML.escape(DisplayText.safe($0, limit: 200)))</span>" } ?? "") + "</li>"
        }
        text += "<p data-field=\"devices-connected\" data-value=\"\(connected)\">\(count(connected, "device")) connected</p>"
            + (rows.isEmpty ? "<p>No drivers configured.</p>" : "<ul class=\"drivers\">\(rows)</ul>")
        return card("This box", text, attributes: liveAttributes)
    }

    /// The card ``HTML/liveScript`` replaces with each one `/events/status` sends.
    static let liveAttributes = " id=\"live-status\" aria-live=\"polite\""

    /// One server-sent event of type `status` carrying `html` (one `data:` line per line).
    static func statusEvent(_ html: String) -> String {
        "event: status\n" + html.split(separator: "\n", omittingEmptySubsequences: false).map { "data: \($0)\n" }.joined() + "\n"
    }
}
