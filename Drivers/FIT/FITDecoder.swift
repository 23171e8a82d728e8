import DriverKit
public import Foundation

/// Decodes FIT byte streams: file headers, definition and data messages (normal and
/// compressed-timestamp headers, both architectures, every base type, arrays, developer
/// fields), scale and offset, component expansion with accumulation, chained files and CRCs.
///
/// Pure: no I/O. Each definition message is compiled once into a field plan; data messages are
/// decoded into reusable buffers and handed to a ``FITVisitor`` as a ``FITMessage`` view, so the
/// hot path allocates nothing.
///
/// Damage throws ``DecodeError`` at the exact byte offset, after the visitor has seen every
/// message decoded before it.
public enum FITDecoder {
    /// Decodes every FIT file in `data`, in order, into `visitor`.
    public static func decode<V: FITVisitor>(_ data: Data, into visitor: inout V) throws {
        try data.withUnsafeBytes { input in try decode(input, into: &visitor) }
    }

    /// Decodes every FIT file in `input`, in order, into `visitor`.
    public static func decode<V: FITVisitor>(_ input: UnsafeRawBufferPointer, into visitor: inout V) throws {
        guard input.count > 0 else { throw DecodeError(at: .byte(0), "empty file (zero bytes), not a FIT file") }
        let state = FITDecoderState()
        var fileStart = 0
        while fileStart < input.count {
            let header = try readHeader(input, at: fileStart)
            try visitor.fileHeader(header)
            state.reset()
            let dataStart = fileStart + header.headerSize
            let declaredEnd = dataStart + header.dataSize
            let bounds = DataBounds(header: header, declaredEnd: declaredEnd, dataEnd: min(declaredEnd, input.count),
                                    fileSize: input.count)
            var position = dataStart
            while position < bounds.dataEnd {
                position = try decodeRecord(input, at: position, bounds: bounds, state: state, visitor: &visitor)
            }
            if declaredEnd > input.count {
                throw DecodeError(at: .byte(input.count),
                                  "truncated file: the data ends at byte \(input.count), but the header at byte \(fileStart) declares \(header.dataSize) data bytes (up to byte \(declaredEnd))")
            }
            guard declaredEnd + 2 <= input.count else {
                throw DecodeError(at: .byte(declaredEnd), "truncated file: the file CRC at byte \(declaredEnd) is missing")
            }
            let stored = UInt16(input[declaredEnd]) | UInt16(input[declaredEnd + 1]) << 8
            let computed = FITCRC.update(0, UnsafeRawBufferPointer(rebasing: input[fileStart..<declaredEnd]))
            guard stored == computed else {
                throw DecodeError(at: .byte(declaredEnd),
                                  "bad file CRC: stored \(hex(stored)), computed \(hex(computed)) over bytes \(fileStart)..<\(declaredEnd)")
            }
            try visitor.fileEnd(at: declaredEnd + 2)
            fileStart = declaredEnd + 2
        }
    }

    /// Reads and checks the file header at `offset`.
    public static func readHeader(_ input: UnsafeRawBufferPointer, at offset: Int) throws -> FITFileHeader {
        let available = input.count - offset
        guard available >= 12 else {
            throw DecodeError(at: .byte(offset), "not a FIT file: \(available) bytes at byte \(offset) are too few for a FIT file header (12 or 14 bytes)")
        }
        guard input[offset + 8] == 0x2E, input[offset + 9] == 0x46, input[offset + 10] == 0x49, input[offset + 11] == 0x54 else {
            throw DecodeError(at: .byte(offset), "not a FIT file: the header at byte \(offset) lacks the \".FIT\" signature at byte \(offset + 8)")
        }
        let headerSize = Int(input[offset])
        guard headerSize == 12 || headerSize == 14 else {
            throw DecodeError(at: .byte(offset), "bad FIT header: header size \(headerSize) at byte \(offset) is neither 12 nor 14")
        }
        guard available >= headerSize else {
            throw DecodeError(at: .byte(offset), "truncated FIT header at byte \(offset): \(headerSize) bytes declared, \(available) present")
        }
        let dataSize = Int(input[offset + 4]) | Int(input[offset + 5]) << 8 | Int(input[offset + 6]) << 16 | Int(input[offset + 7]) << 24
        var headerCRC: UInt16?
        if headerSize == 14 {
            let stored = UInt16(input[offset + 12]) | UInt16(input[offset + 13]) << 8
            if stored != 0 {
                let computed = FITCRC.update(0, UnsafeRawBufferPointer(rebasing: input[offset..<(offset + 12)]))
                guard stored == computed else {
                    throw DecodeError(at: .byte(offset + 12), "bad header CRC at byte \(offset + 12): stored \(hex(stored)), computed \(hex(computed))")
                }
                headerCRC = stored
            }
        }
        return FITFileHeader(offset: offset, headerSize: headerSize, protocolVersion: input[offset + 1],
                             profileVersion: UInt16(input[offset + 2]) | UInt16(input[offset + 3]) << 8,
                             dataSize: dataSize, headerCRC: headerCRC)
    }

    /// The data section of one file: where records may be read and how to word overruns.
    struct DataBounds {
        var header: FITFileHeader
        var declaredEnd: Int
        /// `declaredEnd`, or the end of the input when the file is truncated.
        var dataEnd: Int
        var fileSize: Int

        func overrun(_ what: String, at position: Int, size: Int) -> DecodeError {
            if dataEnd < declaredEnd {
                return DecodeError(at: .byte(position),
                                   "truncated \(what) at byte \(position): it needs \(size) bytes, the file ends at byte \(fileSize)")
            }
            return DecodeError(at: .byte(position),
                               "\(what) at byte \(position) (\(size) bytes) runs past the end of the data at byte \(declaredEnd)")
        }
    }

    @inline(__always)
    static func decodeRecord<V: FITVisitor>(_ input: UnsafeRawBufferPointer, at position: Int, bounds: DataBounds,
                                            state: FITDecoderState, visitor: inout V) throws -> Int {
        let recordHeader = input[position]
        if recordHeader & 0x80 != 0 {
            let local = Int((recordHeader >> 5) & 0x03)
            return try decodeData(input, at: position, local: local, timeOffset: UInt32(recordHeader & 0x1F),
                                  bounds: bounds, state: state, visitor: &visitor)
        }
        if recordHeader & 0x40 != 0 {
            return try decodeDefinition(input, at: position, bounds: bounds, state: state, visitor: &visitor)
        }
        return try decodeData(input, at: position, local: Int(recordHeader & 0x0F), timeOffset: nil,
                              bounds: bounds, state: state, visitor: &visitor)
    }

    // MARK: Definitions

    static func decodeDefinition<V: FITVisitor>(_ input: UnsafeRawBufferPointer, at position: Int, bounds: DataBounds,
                                                state: FITDecoderState, visitor: inout V) throws -> Int {
        let recordHeader = input[position]
        let local = recordHeader & 0x0F
        let hasDeveloperFields = recordHeader & 0x20 != 0
        guard position + 6 <= bounds.dataEnd else { throw bounds.overrun("definition message", at: position, size: 6) }
        let architecture = input[position + 2]
        guard architecture <= 1 else {
            throw DecodeError(at: .byte(position + 2),
                              "definition message at byte \(position): architecture \(architecture) at byte \(position + 2) is neither 0 (little endian) nor 1 (big endian)")
        }
        let bigEndian = architecture == 1
        let rawGlobal = UInt16(input[position + 3]) | UInt16(input[position + 4]) << 8
        let global = bigEndian ? rawGlobal.byteSwapped : rawGlobal
        let fieldCount = Int(input[position + 5])
        var end = position + 6 + 3 * fieldCount
        guard end <= bounds.dataEnd else {
            throw bounds.overrun("definition message with \(fieldCount) fields", at: position, size: end - position)
        }
        var developerCount = 0
        if hasDeveloperFields {
            guard end + 1 <= bounds.dataEnd else { throw bounds.overrun("definition message", at: position, size: end + 1 - position) }
            developerCount = Int(input[end])
            end += 1 + 3 * developerCount
            guard end <= bounds.dataEnd else {
                throw bounds.overrun("definition message with \(developerCount) developer fields", at: position, size: end - position)
            }
        }
        // Files redefine the same layouts over and over: reuse the compiled plan.
        let key = DefinitionKey(UnsafeRawBufferPointer(rebasing: input[position..<end]))
        if let cached = state.cachedPlan(key) {
            state.setPlan(cached, local: Int(local))
            if visitor.wantsDefinitions {
                var definition = cached.definition
                definition.offset = position
                definition.localNumber = local
                try visitor.definition(definition)
            }
            return end
        }
        var fields: [FITDefinition.FieldDefinition] = []
        fields.reserveCapacity(fieldCount)
        for i in 0..<fieldCount {
            let p = position + 6 + 3 * i
            fields.append(.init(number: input[p], size: Int(input[p + 1]), baseTypeByte: input[p + 2], developerIndex: nil))
        }
        var developerFields: [FITDefinition.FieldDefinition] = []
        let developerStart = position + 6 + 3 * fieldCount + 1
        for i in 0..<developerCount {
            let p = developerStart + 3 * i
            developerFields.append(.init(number: input[p], size: Int(input[p + 1]), baseTypeByte: 0x0D,
                                         developerIndex: input[p + 2]))
        }
        let definition = FITDefinition(offset: position, localNumber: local, globalNumber: global, bigEndian: bigEndian,
                                       fields: fields, developerFields: developerFields,
                                       messageSize: (fields + developerFields).reduce(0) { $0 + $1.size })
        let plan = MessagePlan(definition, state: state)
        state.setPlan(plan, local: Int(local))
        state.cachePlan(plan, for: key)
        if visitor.wantsDefinitions { try visitor.definition(definition) }
        return end
    }

    // MARK: Data messages

    @inline(__always)
    static func decodeData<V: FITVisitor>(_ input: UnsafeRawBufferPointer, at position: Int, local: Int, timeOffset: UInt32?,
                                          bounds: DataBounds, state: FITDecoderState, visitor: inout V) throws -> Int {
        guard let messagePlan = state.active[local] else {
            throw DecodeError(at: .byte(position),
                              "data message at byte \(position) uses local message type \(local), which no definition message defined")
        }
        let start = position + 1
        let end = start + messagePlan.messageSize
        guard end <= bounds.dataEnd else {
            throw bounds.overrun("\(FITProfile.messageName(messagePlan.globalNumber)) message", at: position, size: end - position)
        }
        let base = input.baseAddress! + start
        var fieldCount = 0
        var valueCount = 0
        var timestamp: UInt32?
        let fieldsOut = state.fields
        let valuesOut = state.values
        let bigEndian = messagePlan.bigEndian
        let plans = messagePlan.fields

        for index in 0..<messagePlan.fieldCount {
            let plan = plans + index
            let p = base + plan.pointee.offsetInMessage
            let valueStart = valueCount
            // The raw bits of the value (of the last valid element), for timestamps and accumulators.
            var raw: UInt64
            let v: Double
            switch plan.pointee.op {
            case .uint8:
                raw = UInt64(p.load(as: UInt8.self))
                if raw == plan.pointee.invalid { continue }
                v = Double(Int64(bitPattern: raw))
            case .uint16:
                raw = load16(p, bigEndian: bigEndian)
                if raw == plan.pointee.invalid { continue }
                v = Double(Int64(bitPattern: raw))
            case .uint32:
                raw = load32(p, bigEndian: bigEndian)
                if raw == plan.pointee.invalid { continue }
                v = Double(Int64(bitPattern: raw))
            case .sint8:
                raw = UInt64(p.load(as: UInt8.self))
                if raw == plan.pointee.invalid { continue }
                v = Double(Int8(truncatingIfNeeded: raw))
            case .sint16:
                raw = load16(p, bigEndian: bigEndian)
                if raw == plan.pointee.invalid { continue }
                v = Double(Int16(truncatingIfNeeded: raw))
            case .sint32:
                raw = load32(p, bigEndian: bigEndian)
                if raw == plan.pointee.invalid { continue }
                v = Double(Int32(truncatingIfNeeded: raw))
            case .general:
                raw = 0
                guard decodeElements(plan, at: p, bigEndian: bigEndian, into: valuesOut, valueCount: &valueCount,
                                     lastRaw: &raw) else { continue }
                v = 0
            }
            if plan.pointee.op != .general {
                valuesOut[valueCount] = plan.pointee.scaled ? v / plan.pointee.scale - plan.pointee.valueOffset : v
                valueCount &+= 1
            }
            // Counts stay within the buffers `MessagePlan` reserved: no overflow checks needed.
            var field = plan.pointee.output
            field.valueStart = Int32(truncatingIfNeeded: valueStart)
            field.valueCount = Int32(truncatingIfNeeded: valueCount &- valueStart)
            field.byteOffset &+= start
            fieldsOut[fieldCount] = field
            fieldCount &+= 1
            if plan.pointee.special {
                switch plan.pointee.role {
                case .none: break
                case .timestamp:
                    timestamp = UInt32(truncatingIfNeeded: raw)
                    state.lastTimestamp = timestamp!
                case .timestamp16:
                    if timestamp == nil {
                        let last = state.lastTimestamp
                        let t = last &+ ((UInt32(truncatingIfNeeded: raw) &- last) & 0xFFFF)
                        timestamp = t
                        state.lastTimestamp = t
                    }
                }
                if plan.pointee.seedSlot >= 0 { state.accumulators[plan.pointee.seedSlot] = raw }
                if plan.pointee.wholeComponent {
                    // The component's raw value is the field's own (as `expandComponents` would extract it).
                    let component = messagePlan.components + plan.pointee.componentStart
                    fieldsOut[fieldCount] = FITField(number: component.pointee.destination, developerIndex: 0xFF,
                                                     baseType: component.pointee.destinationBaseType, kind: .component,
                                                     valueStart: Int32(truncatingIfNeeded: valueCount), valueCount: 1,
                                                     byteOffset: start &+ plan.pointee.offsetInMessage,
                                                     byteCount: plan.pointee.size, descriptionIndex: -1)
                    fieldCount &+= 1
                    valuesOut[valueCount] = Double(raw) / component.pointee.scale - component.pointee.offset
                    valueCount &+= 1
                } else if plan.pointee.componentCount > 0 {
                    expandComponents(of: plan.pointee, at: p, bigEndian: bigEndian,
                                     plan: planComponents(plan.pointee, in: messagePlan),
                                     state: state, fieldCount: &fieldCount, valueCount: &valueCount,
                                     byteOffset: start + plan.pointee.offsetInMessage)
                }
            }
        }

        if let timeOffset {
            let last = state.lastTimestamp
            let t = last &+ ((timeOffset &- last) & 0x1F)
            state.lastTimestamp = t
            timestamp = t
            valuesOut[valueCount] = Double(t)
            fieldsOut[fieldCount] = FITField(number: 253, developerIndex: 0xFF, baseType: .uint32, kind: .synthesized,
                                             valueStart: Int32(valueCount), valueCount: 1, byteOffset: position, byteCount: 0,
                                             descriptionIndex: -1)
            valueCount += 1
            fieldCount += 1
        }

        let message = FITMessage(globalNumber: messagePlan.globalNumber, localNumber: UInt8(local), offset: position,
                                 timestamp: timestamp, fieldPointer: UnsafePointer(fieldsOut), fieldCount: fieldCount,
                                 valuePointer: UnsafePointer(valuesOut), input: input, state: state)
        try visitor.message(message)
        if messagePlan.globalNumber == FITDecoderState.fieldDescriptionMessage { state.recordFieldDescription(message) }
        return end
    }

    /// Decodes the elements of a field the scalar fast path does not handle (strings, bytes,
    /// arrays, 64-bit and float types) into `values`. Returns false when the field is
    /// absent (empty string, all bytes 0xFF, every element invalid); `lastRaw` gets the raw bits
    /// of the last valid element.
    static func decodeElements(_ plan: UnsafeMutablePointer<FieldPlan>, at p: UnsafeRawPointer, bigEndian: Bool,
                               into values: UnsafeMutablePointer<Double>, valueCount: inout Int,
                               lastRaw: inout UInt64) -> Bool {
        let valueStart = valueCount
        switch plan.pointee.read {
        case .string:
            return plan.pointee.size != 0 && p.load(as: UInt8.self) != 0
        case .bytes:
            let size = plan.pointee.size
            var allInvalid = true
            for i in 0..<size {
                let b = p.load(fromByteOffset: i, as: UInt8.self)
                if b != 0xFF { allInvalid = false }
                values[valueCount] = Double(b)
                valueCount += 1
            }
            if allInvalid || size == 0 { valueCount = valueStart; return false }
            return true
        case .unsigned, .unsigned64, .signed, .float32, .float64:
            let elementSize = plan.pointee.elementSize
            var anyValid = false
            for i in 0..<plan.pointee.count {
                let raw = load(p + i * elementSize, size: elementSize, bigEndian: bigEndian)
                if let v = plan.pointee.number(raw) {
                    anyValid = true
                    lastRaw = raw
                    values[valueCount] = plan.pointee.scaled ? v / plan.pointee.scale - plan.pointee.valueOffset : v
                } else {
                    values[valueCount] = .nan
                }
                valueCount += 1
            }
            if !anyValid { valueCount = valueStart }
            return anyValid
        }
    }

    @inline(__always)
    static func planComponents(_ field: FieldPlan, in plan: ActivePlan) -> UnsafeMutableBufferPointer<ComponentPlan> {
        UnsafeMutableBufferPointer(start: plan.components + field.componentStart, count: field.componentCount)
    }

    /// Appends the fields `field`'s components expand to (grouped by destination).
    static func expandComponents(of field: FieldPlan, at p: UnsafeRawPointer, bigEndian: Bool,
                                 plan components: UnsafeMutableBufferPointer<ComponentPlan>, state: FITDecoderState,
                                 fieldCount: inout Int, valueCount: inout Int, byteOffset: Int) {
        let totalBits = field.size * 8
        var groupField = -1
        for component in components {
            guard component.bitOffset < totalBits else { break }
            var raw = extractBits(p, size: field.size, elementSize: field.elementSize, bigEndian: bigEndian,
                                  bitOffset: component.bitOffset, bits: component.bits)
            if component.accumulatorSlot >= 0 {
                let mask: UInt64 = component.bits >= 64 ? .max : (1 << UInt64(component.bits)) - 1
                let previous = state.accumulators[component.accumulatorSlot]
                var value = raw | (previous & ~mask)
                if raw < (previous & mask) { value &+= mask &+ 1 }
                state.accumulators[component.accumulatorSlot] = value
                raw = value
            }
            if component.startsGroup || groupField < 0 {
                groupField = fieldCount
                state.fields[fieldCount] = FITField(number: component.destination, developerIndex: 0xFF,
                                                    baseType: component.destinationBaseType, kind: .component,
                                                    valueStart: Int32(valueCount), valueCount: 0, byteOffset: byteOffset,
                                                    byteCount: field.size, descriptionIndex: -1)
                fieldCount += 1
            }
            state.values[valueCount] = Double(raw) / component.scale - component.offset
            valueCount += 1
            state.fields[groupField].valueCount += 1
        }
    }

    /// `bits` bits at `bitOffset` of a field's value read as one little-endian bit string
    /// (multi-byte elements of big-endian messages are read in their numeric order).
    @inline(__always)
    static func extractBits(_ p: UnsafeRawPointer, size: Int, elementSize: Int, bigEndian: Bool,
                            bitOffset: Int, bits: Int) -> UInt64 {
        if size <= 8, size == elementSize || elementSize == 1 {
            let whole: UInt64
            if size == elementSize {
                whole = load(p, size: size, bigEndian: bigEndian)
            } else {
                var w: UInt64 = 0
                for i in 0..<size { w |= UInt64(p.load(fromByteOffset: i, as: UInt8.self)) << UInt64(8 * i) }
                whole = w
            }
            let shifted = whole >> UInt64(bitOffset)
            return bits >= 64 ? shifted : shifted & ((1 << UInt64(bits)) - 1)
        }
        var result: UInt64 = 0
        var produced = 0
        var bit = bitOffset
        while produced < bits, bit < size * 8 {
            let byteIndex = bit / 8
            let physical = bigEndian && elementSize > 1
                ? (byteIndex / elementSize) * elementSize + (elementSize - 1 - byteIndex % elementSize) : byteIndex
            let byte = UInt64(p.load(fromByteOffset: physical, as: UInt8.self))
            let take = min(8 - bit % 8, bits - produced)
            let chunk = (byte >> UInt64(bit % 8)) & ((1 << UInt64(take)) - 1)
            if produced < 64 { result |= chunk << UInt64(produced) }
            produced += take
            bit += take
        }
        return result
    }

    /// Loads a 16-bit element as an unsigned bit pattern.
    @inline(__always)
    static func load16(_ p: UnsafeRawPointer, bigEndian: Bool) -> UInt64 {
        let v = p.loadUnaligned(as: UInt16.self)
        return UInt64(bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v))
    }

    /// Loads a 32-bit element as an unsigned bit pattern.
    @inline(__always)
    static func load32(_ p: UnsafeRawPointer, bigEndian: Bool) -> UInt64 {
        let v = p.loadUnaligned(as: UInt32.self)
        return UInt64(bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v))
    }

    /// Loads one element of `size` bytes (1, 2, 4 or 8) as an unsigned bit pattern.
    @inline(__always)
    static func load(_ p: UnsafeRawPointer, size: Int, bigEndian: Bool) -> UInt64 {
        switch size {
        case 1: return UInt64(p.load(as: UInt8.self))
        case 2:
            let v = p.loadUnaligned(as: UInt16.self)
            return UInt64(bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v))
        case 4:
            let v = p.loadUnaligned(as: UInt32.self)
            return UInt64(bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v))
        default:
            let v = p.loadUnaligned(as: UInt64.self)
            return bigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)
        }
    }

    static func hex(_ value: UInt16) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}
