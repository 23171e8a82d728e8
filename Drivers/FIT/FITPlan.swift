/// What to do with one defined field when a data message arrives: compiled once per definition.
struct FieldPlan {
    enum Role: UInt8 { case none, timestamp, timestamp16 }

    /// How the elements are read, fixed by the base type used.
    enum Read: UInt8 {
        /// Unsigned integer of 1, 2 or 4 bytes (exact through `Int64`).
        case unsigned
        /// Unsigned 64-bit integer.
        case unsigned64
        /// Signed integer, sign-extended by `signShift`.
        case signed
        case float32
        case float64
        case bytes
        case string
    }

    /// The scalar fast paths: an integer of one element, up to 32 bits. Everything else is `general`.
    enum Op: UInt8 { case uint8, uint16, uint32, sint8, sint16, sint32, general }

    var offsetInMessage: Int
    var op: Op
    /// True when the field sets the message timestamp, seeds an accumulator or has components.
    var special: Bool
    /// True when the field has one component that takes its whole value as is (no bit
    /// extraction, no accumulation), e.g. `speed` -> `enhanced_speed`: expanded inline.
    var wholeComponent: Bool
    var size: Int
    var elementSize: Int
    /// Number of elements (size / elementSize).
    var count: Int
    var read: Read
    var role: Role
    var scaled: Bool
    /// The integer bit pattern that means "no value" (see ``FITBaseType/invalidPattern``).
    var invalid: UInt64
    /// 64 - 8 * elementSize: shifts that sign-extend a signed element.
    var signShift: UInt64
    var scale: Double
    var valueOffset: Double
    var componentStart: Int
    var componentCount: Int
    /// Accumulator this field's raw value seeds (it is the target of accumulated components).
    var seedSlot: Int
    /// The field as handed to the visitor; `valueStart`, `valueCount` and `byteOffset` are
    /// filled in per message (`byteOffset` holds `offsetInMessage` here).
    var output: FITField

    /// The base type actually used: the declared one, or `byte` when the size does not fit it.
    var baseType: FITBaseType { output.baseType }

    init(offsetInMessage: Int, size: Int, baseType: FITBaseType, number: UInt8, developerIndex: UInt8,
         kind: FITFieldKind, componentStart: Int, descriptionIndex: Int32) {
        self.offsetInMessage = offsetInMessage
        self.size = size
        elementSize = baseType.size
        count = size / baseType.size
        switch baseType {
        case .string: read = .string
        case .byte: read = .bytes
        case .sint8, .sint16, .sint32, .sint64: read = .signed
        case .uint64, .uint64z: read = .unsigned64
        case .float32: read = .float32
        case .float64: read = .float64
        case .enum, .uint8, .uint8z, .uint16, .uint16z, .uint32, .uint32z: read = .unsigned
        }
        op = .general
        special = false
        wholeComponent = false
        role = .none
        scaled = false
        invalid = baseType.invalidPattern
        signShift = UInt64(64 - 8 * baseType.size)
        scale = 1
        valueOffset = 0
        self.componentStart = componentStart
        componentCount = 0
        seedSlot = -1
        output = FITField(number: number, developerIndex: developerIndex, baseType: baseType, kind: kind,
                          valueStart: 0, valueCount: 0, byteOffset: offsetInMessage, byteCount: size,
                          descriptionIndex: descriptionIndex)
    }

    /// Sets `op`, `special` and `wholeComponent` once the rest of the plan is known.
    mutating func finish(components: [ComponentPlan]) {
        let numeric = read != .bytes && read != .string
        // Timestamps and accumulator seeds only apply to numeric scalars.
        if !numeric || count != 1 {
            role = .none
            seedSlot = -1
        }
        special = role != .none || seedSlot >= 0 || componentCount > 0
        guard count == 1 else { op = .general; return }
        switch (read, elementSize) {
        case (.unsigned, 1): op = .uint8
        case (.unsigned, 2): op = .uint16
        case (.unsigned, 4): op = .uint32
        case (.signed, 1): op = .sint8
        case (.signed, 2): op = .sint16
        case (.signed, 4): op = .sint32
        default: op = .general
        }
        if op != .general, componentCount == 1 {
            let component = components[componentStart]
            wholeComponent = component.bitOffset == 0 && component.bits >= 8 * size && component.accumulatorSlot < 0
        }
    }

    /// The numeric value of one raw element (not scaled), or nil when it is the invalid value.
    /// Only for numeric reads (not `bytes` or `string`).
    @inline(__always)
    func number(_ raw: UInt64) -> Double? {
        switch read {
        case .unsigned: return raw == invalid ? nil : Double(Int64(bitPattern: raw))
        case .signed: return raw == invalid ? nil : Double(Int64(bitPattern: raw << signShift) >> signShift)
        case .unsigned64: return raw == invalid ? nil : Double(raw)
        case .float32:
            let f = Float(bitPattern: UInt32(truncatingIfNeeded: raw))
            return f.isNaN ? nil : Double(f)
        case .float64:
            let d = Double(bitPattern: raw)
            return d.isNaN ? nil : d
        case .bytes, .string: return nil
        }
    }
}

/// One component expansion step, with its destination resolved.
struct ComponentPlan {
    var destination: UInt8
    var destinationBaseType: FITBaseType
    var bits: Int
    var bitOffset: Int
    var scale: Double
    var offset: Double
    /// Accumulator slot for accumulated components, else -1.
    var accumulatorSlot: Int
    /// True when this component starts a new output field (its destination differs from the previous one).
    var startsGroup: Bool
}

/// A definition message compiled for decoding its data messages.
final class MessagePlan {
    let globalNumber: UInt16
    let bigEndian: Bool
    let messageSize: Int
    /// The field plans, in message order (`fieldCount` of them).
    let fields: UnsafeMutablePointer<FieldPlan>
    let fieldCount: Int
    let components: UnsafeMutablePointer<ComponentPlan>
    /// The definition this plan was compiled from.
    let definition: FITDefinition

    init(_ definition: FITDefinition, state: FITDecoderState) {
        self.definition = definition
        globalNumber = definition.globalNumber
        bigEndian = definition.bigEndian
        messageSize = definition.messageSize
        let profile = FITProfile.message(definition.globalNumber)
        var fieldPlans: [FieldPlan] = []
        var componentPlans: [ComponentPlan] = []
        var offset = 0
        for field in definition.fields {
            defer { offset += field.size }
            var baseType = FITBaseType(definitionByte: field.baseTypeByte)
            if field.size % baseType.size != 0 { baseType = .byte }
            let profileField = profile?.field(field.number)
            var plan = FieldPlan(offsetInMessage: offset, size: field.size, baseType: baseType, number: field.number,
                                 developerIndex: 0xFF, kind: .regular, componentStart: componentPlans.count,
                                 descriptionIndex: -1)
            if let profileField {
                if baseType != .byte, baseType != .string, profileField.scale != 1 || profileField.offset != 0 {
                    plan.scaled = true
                    plan.scale = profileField.scale
                    plan.valueOffset = profileField.offset
                }
                if field.number == 253, baseType == .uint32 { plan.role = .timestamp }
                if profileField.name == "timestamp_16" { plan.role = .timestamp16 }
                if baseType != .string {
                    var previousDestination: UInt8?
                    for component in profileField.components {
                        let destination = profile?.field(component.destination)
                        let slot = component.accumulate
                            ? state.accumulatorSlot(message: definition.globalNumber, field: component.destination) : -1
                        componentPlans.append(ComponentPlan(destination: component.destination,
                                                            destinationBaseType: destination?.baseType ?? .uint32,
                                                            bits: component.bits, bitOffset: component.bitOffset,
                                                            scale: component.scale, offset: component.offset,
                                                            accumulatorSlot: slot,
                                                            startsGroup: previousDestination != component.destination))
                        previousDestination = component.destination
                    }
                    plan.componentCount = componentPlans.count - plan.componentStart
                }
                if baseType != .string, baseType != .byte,
                   let slot = state.existingAccumulatorSlot(message: definition.globalNumber, field: field.number)
                    ?? (FITDecoderState.isAccumulationTarget(message: definition.globalNumber, field: field.number)
                        ? state.accumulatorSlot(message: definition.globalNumber, field: field.number) : nil) {
                    plan.seedSlot = slot
                }
            } else if field.number == 253, baseType == .uint32 {
                plan.role = .timestamp
            }
            plan.finish(components: componentPlans)
            fieldPlans.append(plan)
        }
        for field in definition.developerFields {
            defer { offset += field.size }
            let index = state.developerFieldIndex(developer: field.developerIndex ?? 0, field: field.number)
            let description = index.map { state.developerFields[$0] }
            var baseType = description?.baseType ?? .byte
            if field.size % baseType.size != 0 { baseType = .byte }
            var plan = FieldPlan(offsetInMessage: offset, size: field.size, baseType: baseType, number: field.number,
                                 developerIndex: field.developerIndex ?? 0, kind: .developer,
                                 componentStart: componentPlans.count, descriptionIndex: Int32(index ?? -1))
            if let description, baseType != .byte, baseType != .string,
               description.scale != 1 || description.offset != 0, description.scale != 0 {
                plan.scaled = true
                plan.scale = description.scale
                plan.valueOffset = description.offset
            }
            plan.finish(components: componentPlans)
            fieldPlans.append(plan)
        }
        fieldCount = fieldPlans.count
        fields = .allocate(capacity: max(fieldCount, 1))
        fields.initialize(from: fieldPlans, count: fieldCount)
        components = .allocate(capacity: max(componentPlans.count, 1))
        components.initialize(from: componentPlans, count: componentPlans.count)
        // Room for every element, every component value and a synthesized timestamp.
        let maxValues = fieldPlans.reduce(0) { $0 + max($1.count, $1.size) } + componentPlans.count + 1
        state.reserve(fields: fieldPlans.count + componentPlans.count + 1, values: maxValues)
    }

    deinit {
        fields.deallocate()
        components.deallocate()
    }

    /// What decoding a data message needs, as a plain value (see ``ActivePlan``).
    var active: ActivePlan {
        ActivePlan(globalNumber: globalNumber, bigEndian: bigEndian, messageSize: messageSize, fields: fields,
                   fieldCount: fieldCount, components: components)
    }
}

/// The parts of a ``MessagePlan`` a data message needs, copied into a plain value so that the
/// hot path does no reference counting. Valid while its plan is alive: ``FITDecoderState``
/// keeps the plan of every local message type next to it.
struct ActivePlan {
    var globalNumber: UInt16
    var bigEndian: Bool
    var messageSize: Int
    var fields: UnsafeMutablePointer<FieldPlan>
    var fieldCount: Int
    var components: UnsafeMutablePointer<ComponentPlan>
}

/// The bytes of a definition message with the record header's local number masked out: the
/// plan cache key (the same layout under another local number compiles to the same plan).
struct DefinitionKey: Hashable {
    let bytes: [UInt8]

    init(_ definition: UnsafeRawBufferPointer) {
        var bytes = Array(definition)
        bytes[0] &= 0xF0
        self.bytes = bytes
    }

    /// One call over all the bytes (the synthesized hash feeds the hasher byte by byte).
    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// The decoder's mutable state for one input: compiled definitions, reusable value buffers,
/// accumulators, developer field descriptions and the running timestamp.
final class FITDecoderState {
    static let fieldDescriptionMessage: UInt16 = 206
    /// At most this many accumulated (message, field) pairs; the profile needs far fewer.
    static let maxAccumulators = 64

    /// The plan of each local message type (0-15), owned here; `active` holds the same plans as
    /// plain values for the hot path. Fixed buffers rather than arrays: no exclusivity checks.
    private let plans: UnsafeMutablePointer<MessagePlan?>
    let active: UnsafeMutablePointer<ActivePlan?>
    /// Compiled plans by definition bytes (the record header's local number masked out).
    private var planCache: [DefinitionKey: MessagePlan] = [:]
    static let maxCachedPlans = 1024
    private(set) var fields: UnsafeMutablePointer<FITField>
    private(set) var values: UnsafeMutablePointer<Double>
    private var fieldCapacity = 64
    private var valueCapacity = 1024
    let accumulators: UnsafeMutablePointer<UInt64>
    private var accumulatorKeys: [UInt32] = []
    var developerFields: [FITDeveloperFieldDescription] = []
    var lastTimestamp: UInt32 = 0

    init() {
        plans = .allocate(capacity: 16)
        plans.initialize(repeating: nil, count: 16)
        active = .allocate(capacity: 16)
        active.initialize(repeating: nil, count: 16)
        fields = .allocate(capacity: fieldCapacity)
        values = .allocate(capacity: valueCapacity)
        accumulators = .allocate(capacity: Self.maxAccumulators)
        accumulators.initialize(repeating: 0, count: Self.maxAccumulators)
    }

    deinit {
        plans.deinitialize(count: 16)
        plans.deallocate()
        active.deallocate()
        fields.deallocate()
        values.deallocate()
        accumulators.deallocate()
    }

    /// Forgets everything file-specific (at each chained file's header).
    func reset() {
        plans.update(repeating: nil, count: 16)
        active.update(repeating: nil, count: 16)
        accumulatorKeys = []
        accumulators.update(repeating: 0, count: Self.maxAccumulators)
        developerFields = []
        lastTimestamp = 0
        planCache = [:]
    }

    /// Makes `plan` the plan of local message type `local` (0-15).
    func setPlan(_ plan: MessagePlan, local: Int) {
        plans[local] = plan
        active[local] = plan.active
    }

    func cachedPlan(_ key: DefinitionKey) -> MessagePlan? {
        planCache[key]
    }

    func cachePlan(_ plan: MessagePlan, for key: DefinitionKey) {
        if planCache.count >= Self.maxCachedPlans { planCache = [:] }
        planCache[key] = plan
    }

    /// Grows the reusable buffers (only when a definition needs more than any before it).
    func reserve(fields fieldCount: Int, values valueCount: Int) {
        if fieldCount > fieldCapacity {
            fields.deallocate()
            fieldCapacity = fieldCount
            fields = .allocate(capacity: fieldCapacity)
        }
        if valueCount > valueCapacity {
            values.deallocate()
            valueCapacity = valueCount
            values = .allocate(capacity: valueCapacity)
        }
    }

    func existingAccumulatorSlot(message: UInt16, field: UInt8) -> Int? {
        accumulatorKeys.firstIndex(of: UInt32(message) << 8 | UInt32(field))
    }

    /// The accumulator for `field` of `message`, created on first use (-1 when all are taken).
    func accumulatorSlot(message: UInt16, field: UInt8) -> Int {
        if let slot = existingAccumulatorSlot(message: message, field: field) { return slot }
        guard accumulatorKeys.count < Self.maxAccumulators else { return -1 }
        accumulatorKeys.append(UInt32(message) << 8 | UInt32(field))
        return accumulatorKeys.count - 1
    }

    /// Whether some component of `message` accumulates into `field`.
    static func isAccumulationTarget(message: UInt16, field: UInt8) -> Bool {
        FITProfile.message(message)?.accumulationTargets.contains(field) ?? false
    }

    func developerFieldIndex(developer: UInt8, field: UInt8) -> Int? {
        developerFields.lastIndex { $0.developerIndex == developer && $0.fieldNumber == field }
    }

    /// Keeps the developer field a `field_description` message describes.
    func recordFieldDescription(_ message: FITMessage) {
        guard let developer = message.int(0), let number = message.int(1),
              (0...255).contains(developer), (0...255).contains(number) else { return }
        let baseType = FITBaseType(definitionByte: UInt8(truncatingIfNeeded: message.int(2) ?? 0x0D))
        let description = FITDeveloperFieldDescription(
            developerIndex: UInt8(developer), fieldNumber: UInt8(number),
            name: message.string(3) ?? "developer_\(developer)_\(number)", baseType: baseType,
            scale: message.value(6) ?? 1, offset: message.value(7) ?? 0, units: message.string(8) ?? "",
            nativeFieldNumber: message.int(15).flatMap { (0...254).contains($0) ? UInt8($0) : nil })
        planCache = [:] // plans with developer fields depend on the descriptions
        if let index = developerFieldIndex(developer: UInt8(developer), field: UInt8(number)) {
            developerFields[index] = description
        } else if developerFields.count < 4096 {
            developerFields.append(description)
        }
    }
}
