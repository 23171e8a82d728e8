public import DriverKit
public import Foundation

/// Prints decoded FIT messages for `healthgate inspect`, in the spirit of the FIT SDK's
/// FitCSVTool: one CSV line per definition and data message.
public enum FITInspector {
    /// The CSV header line.
    public static let csvHeader = "Type,Local Number,Message,Field 1,Value 1,Units 1,..."

    /// Writes one line per definition (`Definition,<local>,<message>,<field>,<count>,,...`) and
    /// data message (`Data,<local>,<message>,<field>,"<value>",<units>,...`; arrays joined by `|`,
    /// enumerated values by name, developer fields by their described name). On damage, the lines
    /// decoded so far have been written when the ``DecodeError`` is thrown.
    public static func writeCSV(_ data: Data, to write: (String) -> Void) throws {
        write("Type,Local Number,Message,Field 1,Value 1,Units 1")
        try withoutActuallyEscaping(write) { write in
            var printer = CSVPrinter(write: write)
            try FITDecoder.decode(data, into: &printer)
        }
    }

    /// Data message counts by message name, most frequent first (ties by name). On damage,
    /// throws the ``DecodeError``; use ``messageCounts(_:partial:)`` to get the counts too.
    public static func messageCounts(_ data: Data) throws -> [(name: String, count: Int)] {
        let (counts, error) = messageCountsAllowingDamage(data)
        if let error { throw error }
        return counts
    }

    /// Counts of what decoded before any damage, and the damage.
    public static func messageCountsAllowingDamage(_ data: Data) -> (counts: [(name: String, count: Int)], error: DecodeError?) {
        var counter = Counter()
        var failure: DecodeError?
        do { try FITDecoder.decode(data, into: &counter) } catch let error as DecodeError { failure = error } catch {
            failure = DecodeError(at: .file, "\(error)")
        }
        let counts = counter.counts.map { (name: FITProfile.messageName($0.key), count: $0.value) }
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.name < $1.name }
        return (counts, failure)
    }

    struct Counter: FITVisitor {
        var counts: [UInt16: Int] = [:]
        mutating func message(_ message: FITMessage) throws { counts[message.globalNumber, default: 0] += 1 }
    }

    struct CSVPrinter: FITVisitor {
        let write: (String) -> Void
        var wantsDefinitions: Bool { true }

        func definition(_ d: FITDefinition) throws {
            var cells = ["Definition", String(d.localNumber), FITProfile.messageName(d.globalNumber)]
            let profile = FITProfile.message(d.globalNumber)
            for f in d.fields {
                let type = FITBaseType(definitionByte: f.baseTypeByte)
                cells += [profile?.field(f.number)?.name ?? "unknown_\(f.number)", String(max(1, f.size / type.size)), ""]
            }
            for f in d.developerFields {
                cells += ["developer_\(f.developerIndex ?? 0)_\(f.number)", String(f.size), ""]
            }
            write(cells.map(FITInspector.csvCell).joined(separator: ","))
        }

        func message(_ m: FITMessage) throws {
            var cells = ["Data", String(m.localNumber), m.name]
            let profile = FITProfile.message(m.globalNumber)
            for i in 0..<m.fieldCount {
                let field = m.field(at: i)
                let value: String
                if field.baseType == .string {
                    value = m.string(of: field)
                } else {
                    let enumType = field.kind == .developer ? nil : profile?.field(field.number)?.enumType
                    value = m.values(of: field).map { v -> String in
                        if v.isNaN { return "" }
                        if let enumType, v.isFinite, abs(v) < 1e9, let name = FITProfile.valueName(type: enumType, value: Int(v)) {
                            return name
                        }
                        return FITInspector.format(v)
                    }.joined(separator: "|")
                }
                cells += [m.name(of: field), value, m.units(of: field)]
            }
            write(cells.map(FITInspector.csvCell).joined(separator: ","))
        }
    }

    /// Integers without a decimal point, other numbers with up to 7 significant decimals.
    static func format(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        var text = String(format: "%.7f", v)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    static func csvCell(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
