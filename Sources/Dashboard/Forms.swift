import Foundation
import HealthModel
import ManualDriver
import Synchronization

/// A form of the pages, as the browser posts it (`application/x-www-form-urlencoded`): the same
/// fields as `healthgate log`'s options, turned into the same ``EntryRequest`` and built by the
/// same entry builder. Empty fields are absent.
struct LogForm: Decodable {
    var csrf: String
    var kind: String
    var value: String?
    var name: String?
    var trigger: String?
    var thoughts: String?
    var at: String?
    var done: String?
    var kcal: String?

    /// What the pages log: drinks, vaping sessions, habit check-ins and meals.
    static let kinds: [EntryRequest.Kind] = [.drink, .glass, .bottle, .water, .vape, .habit, .meal]

    func request() throws(EntryError) -> EntryRequest {
        guard let kind = EntryRequest.Kind(rawValue: kind), Self.kinds.contains(kind) else {
            throw EntryError("the pages cannot log '\(kind)': \(Self.kinds.map(\.rawValue).joined(separator: ", "))")
        }
        func field(_ text: String?) -> String? {
            guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
            return text
        }
        var energy: Double?
        if let text = field(kcal) {
            guard let value = Double(text), value.isFinite else { throw EntryError("'\(text)' is not a number of kcal") }
            energy = value
        }
        return EntryRequest(kind: kind, name: field(name), value: field(value), done: field(done).map { _ in true },
                            trigger: field(trigger), thoughts: field(thoughts), kcal: energy, at: field(at))
    }
}

/// The token every form carries against cross-site request forgery: random, made when the
/// dashboard starts, written into its own pages only. Another site cannot read those pages (the
/// browser's same-origin rule), so it cannot send the token.
struct FormToken: Sendable {
    let value: String

    init() {
        var generator = SystemRandomNumberGenerator()
        value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Compared in constant time.
    func matches(_ text: String) -> Bool {
        let a = Array(value.utf8), b = Array(text.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// What a form did, shown once on the page the browser is sent to after it (post, redirect,
/// get): kept here under a random key, so that a link cannot make a page say anything.
final class Notices: Sendable {
    private let pending = Mutex<[String: String]>([:])

    func add(_ text: String) -> String {
        let key = UUID().uuidString
        pending.withLock { notices in
            // A browser that never follows the redirect leaves its notice: at most 100 kept.
            if notices.count >= 100 { notices.removeAll() }
            notices[key] = text
        }
        return key
    }

    func take(_ key: String) -> String? { pending.withLock { $0.removeValue(forKey: key) } }
}
