import Foundation
@testable import FITDriver

/// A small FIT writer for tests: definitions in either byte order, data messages with normal or
/// compressed-timestamp headers, developer fields, chained files, and deliberate damage.
struct FITEncoder {
    /// A value to write for one defined field.
    enum Value {
        case int(Int64)
        case ints([Int64])
        case float(Double)
        case string(String)
        case bytes([UInt8])
        /// The base type's invalid value (all elements).
        case invalid
    }

    struct Field {
        var number: UInt8
        var type: FITBaseType
        /// Elements (strings: bytes including the terminating NUL).
        var count: Int = 1
        var size: Int { type.size * count }
    }

    struct Definition {
        var global: UInt16
        var fields: [Field]
        var developer: [(number: UInt8, size: Int, index: UInt8)]
        var bigEndian: Bool
    }

    private(set) var records: [UInt8] = []
    private var definitions: [UInt8: Definition] = [:]

    /// Writes a definition message for local type `local`.
    mutating func define(local: UInt8, global: UInt16, fields: [Field], developer: [(number: UInt8, size: Int, index: UInt8)] = [],
                         bigEndian: Bool = false) {
        records.append(0x40 | (developer.isEmpty ? 0 : 0x20) | (local & 0x0F))
        records.append(0)
        records.append(bigEndian ? 1 : 0)
        records += bigEndian ? [UInt8(global >> 8), UInt8(global & 0xFF)] : [UInt8(global & 0xFF), UInt8(global >> 8)]
        records.append(UInt8(fields.count))
        for f in fields { records += [f.number, UInt8(f.size), f.type.definitionByte] }
        if !developer.isEmpty {
            records.append(UInt8(developer.count))
            for d in developer { records += [d.number, UInt8(d.size), d.index] }
        }
        definitions[local] = Definition(global: global, fields: fields, developer: developer, bigEndian: bigEndian)
    }

    /// Writes a data message; `values` follow the definition's field order (developer fields last, as raw bytes).
    mutating func data(local: UInt8, _ values: [Value], developerBytes: [[UInt8]] = []) {
        records.append(local & 0x0F)
        appendValues(local: local, values, developerBytes: developerBytes)
    }

    /// Writes a data message with a compressed-timestamp header (local types 0-3).
    mutating func compressed(local: UInt8, timeOffset: UInt8, _ values: [Value]) {
        records.append(0x80 | (local & 0x03) << 5 | (timeOffset & 0x1F))
        appendValues(local: local, values, developerBytes: [])
    }

    /// Appends raw bytes (for hostile inputs).
    mutating func raw(_ bytes: [UInt8]) { records += bytes }

    private mutating func appendValues(local: UInt8, _ values: [Value], developerBytes: [[UInt8]]) {
        let definition = definitions[local]!
        for (field, value) in zip(definition.fields, values) {
            records += encode(value, field, bigEndian: definition.bigEndian)
        }
        for (d, bytes) in zip(definition.developer, developerBytes) {
            records += Array((bytes + Array(repeating: 0, count: d.size)).prefix(d.size))
        }
    }

    private func encode(_ value: Value, _ field: Field, bigEndian: Bool) -> [UInt8] {
        func element(_ bits: UInt64) -> [UInt8] {
            let le = (0..<field.type.size).map { UInt8(truncatingIfNeeded: bits >> UInt64(8 * $0)) }
            return bigEndian ? le.reversed() : le
        }
        switch value {
        case .int(let v): return element(UInt64(bitPattern: v)) + Array(repeating: 0, count: field.size - field.type.size)
        case .ints(let vs): return vs.prefix(field.count).flatMap { element(UInt64(bitPattern: $0)) }
        case .float(let v):
            return field.type == .float32 ? element(UInt64(Float(v).bitPattern)) : element(v.bitPattern)
        case .string(let s): return Array((Array(s.utf8) + Array(repeating: 0, count: field.size)).prefix(field.size))
        case .bytes(let b): return Array((b + Array(repeating: 0xFF, count: field.size)).prefix(field.size))
        case .invalid:
            if field.type == .string { return Array(repeating: 0, count: field.size) }
            if field.type == .float32 || field.type == .float64 { return Array(repeating: 0xFF, count: field.size) }
            return (0..<field.count).flatMap { _ in element(field.type.invalidPattern) }
        }
    }

    /// The complete file: header (12 or 14 bytes, header CRC when 14), records and file CRC.
    func file(headerSize: Int = 14, dataSize: Int? = nil, headerCRC: UInt16? = nil, fileCRC: UInt16? = nil) -> [UInt8] {
        let size = UInt32(dataSize ?? records.count)
        var header: [UInt8] = [UInt8(headerSize), 0x20, 0x08, 0x08,
                               UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24),
                               0x2E, 0x46, 0x49, 0x54]
        if headerSize == 14 {
            let crc = headerCRC ?? FITCRC.compute(header)
            header += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
        }
        let body = header + records
        let crc = fileCRC ?? FITCRC.compute(body)
        return body + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// A `file_id` definition (local 15) and message: type, manufacturer, product, serial, time_created.
    mutating func fileID(type: Int64, manufacturer: Int64 = 1, product: Int64 = 2697, serial: Int64 = 3_921_234_567,
                         timeCreated: Int64 = 900_000_000) {
        define(local: 15, global: 0, fields: [
            Field(number: 0, type: .enum), Field(number: 1, type: .uint16), Field(number: 2, type: .uint16),
            Field(number: 3, type: .uint32z), Field(number: 4, type: .uint32),
        ])
        data(local: 15, [.int(type), .int(manufacturer), .int(product), .int(serial), .int(timeCreated)])
    }
}
