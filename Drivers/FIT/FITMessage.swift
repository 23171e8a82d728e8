/// The header of one FIT file (a byte stream may chain several).
public struct FITFileHeader: Sendable, Equatable {
    /// Offset of the header's first byte in the whole input.
    public var offset: Int
    /// 12 or 14.
    public var headerSize: Int
    public var protocolVersion: UInt8
    public var profileVersion: UInt16
    /// Bytes of records between the header and the file CRC, as declared.
    public var dataSize: Int
    /// The header CRC when present and non-zero.
    public var headerCRC: UInt16?
}

/// How a decoded field got into its message.
public enum FITFieldKind: UInt8, Sendable {
    /// Read from the message bytes as defined.
    case regular
    /// Expanded from another field's components (e.g. `enhanced_speed` from `speed`).
    case component
    /// A developer field, described by a `field_description` message.
    case developer
    /// The timestamp a compressed-timestamp record header implies.
    case synthesized
}

/// One decoded field of a ``FITMessage``: where its values and bytes are.
public struct FITField: Sendable {
    /// Field definition number (for components: the destination field's number).
    public var number: UInt8
    /// The developer data index for developer fields, 0xFF otherwise.
    public var developerIndex: UInt8
    public var baseType: FITBaseType
    public var kind: FITFieldKind
    /// Index into the message's value buffer and number of elements (0 for strings).
    var valueStart: Int32
    var valueCount: Int32
    /// The field's bytes in the input.
    public var byteOffset: Int
    public var byteCount: Int
    /// Index of the developer field description (developer fields only), else -1.
    var descriptionIndex: Int32

    /// Number of decoded elements (1 for a scalar, n for an array, 0 for a string).
    public var count: Int { Int(valueCount) }
    public var isDeveloper: Bool { kind == .developer }
}

/// A developer field as described by a `field_description` message.
public struct FITDeveloperFieldDescription: Sendable, Equatable {
    public var developerIndex: UInt8
    public var fieldNumber: UInt8
    public var name: String
    public var baseType: FITBaseType
    public var scale: Double
    public var offset: Double
    public var units: String
    /// The native field this developer field mirrors, if any.
    public var nativeFieldNumber: UInt8?
}

/// A decoded data message, handed to a ``FITVisitor``.
///
/// A view into the decoder's reusable buffers: valid only during the visitor call that
/// receives it. Copy out what you need (`value`, `string`, `values`).
public struct FITMessage {
    /// The global message number (`20` is `record`).
    public let globalNumber: UInt16
    /// The local message type (0-15) the record header named.
    public let localNumber: UInt8
    /// Offset of the record header in the input.
    public let offset: Int
    /// The message's FIT timestamp (seconds since 1989-12-31T00:00:00Z): its `timestamp` field,
    /// the time a compressed-timestamp header implies, or (monitoring) the one `timestamp_16`
    /// completes. Nil when the message carries none.
    public let timestamp: UInt32?
    let fieldPointer: UnsafePointer<FITField>
    /// Number of decoded fields (invalid fields are absent).
    public let fieldCount: Int
    let valuePointer: UnsafePointer<Double>
    let input: UnsafeRawBufferPointer
    unowned(unsafe) let state: FITDecoderState

    /// The profile name of the message (`record`), or `unknown_<number>`.
    public var name: String { FITProfile.messageName(globalNumber) }

    /// The decoded field at `index` (0 ..< fieldCount).
    public func field(at index: Int) -> FITField {
        precondition(index >= 0 && index < fieldCount)
        return fieldPointer[index]
    }

    /// The first native (non-developer) field numbered `number`, if present and valid.
    public func field(_ number: UInt8) -> FITField? {
        for i in 0..<fieldCount where fieldPointer[i].number == number && fieldPointer[i].kind != .developer {
            return fieldPointer[i]
        }
        return nil
    }

    /// The first valid, finite element of field `number`, scaled and offset per the profile.
    public func value(_ number: UInt8) -> Double? {
        guard let field = field(number) else { return nil }
        for i in 0..<Int(field.valueCount) {
            let v = valuePointer[Int(field.valueStart) + i]
            if v.isFinite { return v }
        }
        return nil
    }

    /// Field `number`'s first element as an integer (enums, counters, indexes).
    public func int(_ number: UInt8) -> Int? {
        guard let v = value(number), v.isFinite, abs(v) < 9.2e18 else { return nil }
        return Int(v.rounded(.down))
    }

    /// Every element of field `field`, scaled; invalid elements are NaN.
    public func values(of field: FITField) -> [Double] {
        Array(UnsafeBufferPointer(start: valuePointer + Int(field.valueStart), count: Int(field.valueCount)))
    }

    /// Every element of field `number` (empty when absent); invalid elements are NaN.
    public func values(_ number: UInt8) -> [Double] {
        guard let field = field(number) else { return [] }
        return values(of: field)
    }

    /// The text of a string field, up to its first NUL.
    public func string(of field: FITField) -> String {
        let bytes = UnsafeRawBufferPointer(rebasing: input[field.byteOffset..<(field.byteOffset + field.byteCount)])
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
    }

    /// The text of string field `number`, if present.
    public func string(_ number: UInt8) -> String? {
        guard let field = field(number), field.baseType == .string else { return nil }
        return string(of: field)
    }

    /// The raw bytes of a field as stored in the input.
    public func bytes(of field: FITField) -> [UInt8] {
        Array(input[field.byteOffset..<(field.byteOffset + field.byteCount)])
    }

    /// The developer field description of a developer field.
    public func description(of field: FITField) -> FITDeveloperFieldDescription? {
        guard field.descriptionIndex >= 0, Int(field.descriptionIndex) < state.developerFields.count else { return nil }
        return state.developerFields[Int(field.descriptionIndex)]
    }

    /// The field's name: from the profile, the developer description, or `unknown_<number>`.
    public func name(of field: FITField) -> String {
        if field.kind == .developer {
            return description(of: field)?.name ?? "developer_\(field.developerIndex)_\(field.number)"
        }
        return FITProfile.message(globalNumber)?.field(field.number)?.name ?? "unknown_\(field.number)"
    }

    /// The field's units, from the profile or its developer description ("" when none).
    public func units(of field: FITField) -> String {
        if field.kind == .developer { return description(of: field)?.units ?? "" }
        return FITProfile.message(globalNumber)?.field(field.number)?.units ?? ""
    }
}

/// A definition message as decoded, handed to a ``FITVisitor`` (for `inspect`).
public struct FITDefinition: Sendable {
    public struct FieldDefinition: Sendable {
        public var number: UInt8
        public var size: Int
        /// The base type byte as written.
        public var baseTypeByte: UInt8
        /// The developer data index, for developer fields.
        public var developerIndex: UInt8?
    }

    public var offset: Int
    public var localNumber: UInt8
    public var globalNumber: UInt16
    public var bigEndian: Bool
    public var fields: [FieldDefinition]
    public var developerFields: [FieldDefinition]
    /// Size in bytes of the data messages this definition describes (without the header byte).
    public var messageSize: Int
}

/// Receives what the decoder reads, in order. Every method has an empty default.
public protocol FITVisitor {
    /// A FIT file header (the first of the input, or of a chained file).
    mutating func fileHeader(_ header: FITFileHeader) throws
    /// A definition message. Only called when ``wantsDefinitions`` is true.
    mutating func definition(_ definition: FITDefinition) throws
    /// A data message.
    mutating func message(_ message: FITMessage) throws
    /// The end of one FIT file, its CRC checked.
    mutating func fileEnd(at offset: Int) throws
    /// Whether ``definition(_:)`` should be called (building the value costs an allocation).
    var wantsDefinitions: Bool { get }
}

extension FITVisitor {
    public mutating func fileHeader(_ header: FITFileHeader) throws {}
    public mutating func definition(_ definition: FITDefinition) throws {}
    public mutating func message(_ message: FITMessage) throws {}
    public mutating func fileEnd(at offset: Int) throws {}
    public var wantsDefinitions: Bool { false }
}
