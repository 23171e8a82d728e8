import Foundation
import HealthModel
import HealthStore
import Entries
import Synchronization

/// A form of the pages, as the browser posts it (`application/x-www-form-urlencoded`): the same
/// fields as `healthgate log`'s options, turned into the same ``EntryRequest`` and built by the
/// same entry builder. Empty fields are absent.
/// A form the dashboard takes: it carries the pages' token (``FormToken``).
protocol PostedForm: Decodable, Sendable {
    var csrf: String { get }
}

/// A form's field as typed, trimmed; nil when empty (a browser sends every field, filled or not).
func field(_ text: String?) -> String? {
    guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
    return text
}

struct LogForm: PostedForm {
    var csrf: String
    var kind: String
    var value: String?
    var name: String?
    var trigger: String?
    var thoughts: String?
    var at: String?
    var done: String?
    var skip: String?
    var kcal: String?

    /// What the pages log: drinks, vaping sessions, habit check-ins and meals.
    static let kinds: [EntryRequest.Kind] = [.drink, .glass, .bottle, .water, .vape, .habit, .meal]

    func request() throws(EntryError) -> EntryRequest {
        guard let kind = EntryRequest.Kind(rawValue: kind), Self.kinds.contains(kind) else {
            throw EntryError("the pages cannot log '\(kind)': \(Self.kinds.map(\.rawValue).joined(separator: ", "))")
        }
        var energy: Double?
        if let text = field(kcal) {
            guard let value = Double(text), value.isFinite else { throw EntryError("'\(text)' is not a number of kcal") }
            energy = value
        }
        let skipped = field(skip) != nil
        return EntryRequest(kind: kind, name: field(name), value: skipped ? nil : field(value),
                            done: skipped ? nil : field(done).map { _ in true }, skip: skipped ? true : nil,
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

/// An edit of one entry from the entries page: the record and the version the page showed, and
/// the fields as typed. Water takes a volume (`330ml`, a bare number in the user's unit), a
/// weight a mass, a workout a duration, distance and kcal, a night a duration; any habit entry a
/// value and a note. Turned into the store's ``RecordChanges`` (the edit `healthgate edit` makes).
struct EditForm: PostedForm {
    var csrf: String
    var id: String
    var version: String
    var day: String?
    var value: String?
    var note: String?
    var duration: String?
    var distance: String?
    var kcal: String?

    /// The changes for `record`, read in the user's units; an empty field changes nothing (a note
    /// emptied on purpose is cleared: the note field is sent whole).
    func changes(for record: HealthRecord, units: Preferences) throws(EntryError) -> RecordChanges {
        func number(_ text: String, _ what: String) throws(EntryError) -> Double {
            guard let v = Double(text), v.isFinite else { throw EntryError("'\(text)' is not \(what)") }
            return v
        }
        var changes = RecordChanges()
        switch record {
        case .habit(let event):
            if let text = field(value) {
                if Definition.key(event.habit) == BuiltInHabit.hydration {
                    do { changes.value = try Quantities.millilitres(text, bare: units.volume) } catch { throw EntryError("\(error)") }
                } else {
                    changes.value = try number(text, "a number")
                }
            }
            if let note, note != (event.note ?? "") { changes.note = note.trimmingCharacters(in: .whitespacesAndNewlines) }
        case .measurement(let m) where m.kind == .weight:
            if let text = field(value) {
                do { changes.value = try Quantities.kilograms(text, bare: units.mass) } catch { throw EntryError("\(error)") }
            }
        case .workout:
            if let text = field(duration) {
                guard let s = Durations.seconds(text), s > 0 else { throw EntryError("'\(text)' is not a duration (45m, 1h30m)") }
                changes.durationS = s
            }
            if let text = field(distance) {
                do { changes.distanceM = try Quantities.metres(text) } catch { throw EntryError("\(error)") }
            }
            if let text = field(kcal) { changes.energyKcal = try number(text, "a number of kcal") }
        case .sleep:
            if let text = field(duration) {
                guard let s = Durations.seconds(text), s > 0 else { throw EntryError("'\(text)' is not a duration (7h30m)") }
                changes.durationS = s
            }
        default:
            throw EntryError("the pages do not edit this kind of record: use healthgate edit")
        }
        return changes
    }
}

/// A deletion from the entries page: the record and the version the page showed.
struct DeleteForm: PostedForm {
    var csrf: String
    var id: String
    var version: String
    var day: String?
}

/// A logout: only the token.
struct LogoutForm: PostedForm {
    var csrf: String
}
