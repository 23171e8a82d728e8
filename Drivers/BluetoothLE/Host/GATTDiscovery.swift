public import BluetoothCentral
/// GATT client discovery over one ATT bearer as a pure, sequential state machine: it asks for one
/// ATT request at a time and is fed the result.
///
/// Order: primary services (Read By Group Type 0x2800 until Attribute Not Found or end handle
/// 0xFFFF), characteristics per service (Read By Type 0x2803), descriptors per characteristic
/// (Find Information, when a characteristic has room for any), then one CCCD write per wanted
/// subscription (notify preferred, indicate when that is all the characteristic offers), then the
/// wanted reads (Read, then Read Blob while a response fills the MTU). Failed subscriptions and
/// reads are reported and skipped; errors during discovery end it.
public struct GATTDiscovery: Sendable {
    public enum Action: Equatable, Sendable {
        /// Queue this request on the ATT bearer and feed its result to `receive`.
        case request(ATTPDU)
        case discovered(GATTDatabase)
        case subscribed(GATTCharacteristic, GATTSubscriptionMode)
        case subscriptionFailed(BluetoothUUID, reason: String)
        case value(GATTCharacteristic, [UInt8])
        case readFailed(BluetoothUUID, ATTErrorCode)
        /// Discovery, subscriptions and reads are done.
        case finished(GATTDatabase)
        case failed(GATTDiscoveryError)
    }

    public struct Limits: Sendable, Equatable {
        public var maxServices = 64
        public var maxCharacteristics = 256
        public var maxDescriptors = 512
        /// Longest value assembled with Read Blob (the largest attribute value is 512).
        public var maxValueLength = 512
        public init() {}
    }

    private enum Step: Equatable {
        case idle
        case services(next: UInt16)
        case characteristics(service: Int, next: UInt16)
        case descriptors(characteristic: Int, next: UInt16)
        case subscribing(Int, GATTSubscriptionMode)
        case reading(Int, value: [UInt8])
        case done
        case failed
    }

    public let subscriptions: [BluetoothUUID]
    public let reads: [BluetoothUUID]
    public let limits: Limits
    /// The bearer's MTU; set it when the bearer reports `mtuChanged` (decides Read Blob).
    public var mtu: UInt16 = 23
    public private(set) var database = GATTDatabase(services: [])
    private var step: Step = .idle
    /// Characteristics flattened as (service index, characteristic index).
    private var flat: [(s: Int, c: Int)] = []
    private var subscribeQueue: [(Int, GATTSubscriptionMode)] = []
    private var readQueue: [Int] = []

    public init(subscribe: [BluetoothUUID] = [], read: [BluetoothUUID] = [], limits: Limits = Limits()) {
        self.subscriptions = subscribe
        self.reads = read
        self.limits = limits
    }

    public var isFinished: Bool { step == .done || step == .failed }

    public mutating func start() -> [Action] {
        guard step == .idle else { return [] }
        step = .services(next: 0x0001)
        return [.request(.readByGroupTypeRequest(start: 0x0001, end: 0xFFFF, type: .primaryService))]
    }

    /// The connection dropped: discovery fails (once).
    public mutating func disconnected() -> [Action] {
        guard !isFinished else { return [] }
        step = .failed
        return [.failed(.disconnected)]
    }

    /// Feeds the result of the last requested ATT request.
    public mutating func receive(_ result: Result<ATTPDU, ATTRequestError>) -> [Action] {
        switch step {
        case .idle, .done, .failed:
            return []
        case .services(let next):
            return services(result, next: next)
        case .characteristics(let s, let next):
            return characteristics(result, service: s, next: next)
        case .descriptors(let i, let next):
            return descriptors(result, index: i, next: next)
        case .subscribing(let i, let mode):
            let (s, c) = flat[i]
            let characteristic = database.services[s].characteristics[c]
            var actions: [Action]
            switch result {
            case .success(.writeResponse): actions = [.subscribed(characteristic, mode)]
            case .success(let other): actions = [.subscriptionFailed(characteristic.uuid, reason: "unexpected \(other)")]
            case .failure(let error):
                if let fatal = fatal(error) { return fatal }
                actions = [.subscriptionFailed(characteristic.uuid, reason: "\(error)")]
            }
            return actions + nextSubscription()
        case .reading(let i, let value):
            let (s, c) = flat[i]
            let characteristic = database.services[s].characteristics[c]
            switch result {
            case .success(.readResponse(let bytes)), .success(.readBlobResponse(let bytes)):
                let all = value + bytes
                if bytes.count == Int(mtu) - 1 && all.count < limits.maxValueLength {
                    step = .reading(i, value: all)
                    return [.request(.readBlobRequest(handle: characteristic.valueHandle, offset: UInt16(all.count)))]
                }
                return [.value(characteristic, all)] + nextRead()
            case .success:
                return [.readFailed(characteristic.uuid, .unlikelyError)] + nextRead()
            case .failure(.peer(let code, _)):
                // A long read that ends exactly on the MTU boundary is answered with these.
                if !value.isEmpty && (code == .invalidOffset || code == .attributeNotLong) {
                    return [.value(characteristic, value)] + nextRead()
                }
                return [.readFailed(characteristic.uuid, code)] + nextRead()
            case .failure(let error):
                return fatal(error) ?? []
            }
        }
    }

    private mutating func fatal(_ error: ATTRequestError) -> [Action]? {
        switch error {
        case .peer: return nil
        case .timeout: step = .failed; return [.failed(.timeout)]
        case .closed: step = .failed; return [.failed(.disconnected)]
        }
    }

    private mutating func fail(_ error: GATTDiscoveryError) -> [Action] {
        step = .failed
        return [.failed(error)]
    }

    /// Common handling of the "list until Attribute Not Found" pattern.
    private mutating func listError(_ error: ATTRequestError) -> [Action]? {
        if case .peer(.attributeNotFound, _) = error { return nil }
        if case .peer(let code, let handle) = error { return fail(.peer(code, handle: handle)) }
        return fatal(error)
    }

    private mutating func services(_ result: Result<ATTPDU, ATTRequestError>, next: UInt16) -> [Action] {
        switch result {
        case .failure(let error):
            if let actions = listError(error) { return actions }
            return startCharacteristics(service: 0)
        case .success(.readByGroupTypeResponse(let entries)):
            var last: UInt16 = 0
            for e in entries {
                guard e.handle >= next, e.endGroupHandle >= e.handle, let uuid = BluetoothUUID(littleEndian: e.value) else {
                    return fail(.protocolViolation("service group 0x\(hex(e.handle, width: 4))-0x\(hex(e.endGroupHandle, width: 4))"))
                }
                guard database.services.count < limits.maxServices else { return fail(.tooManyAttributes(limit: limits.maxServices)) }
                database.services.append(GATTService(uuid: uuid, startHandle: e.handle, endHandle: e.endGroupHandle, characteristics: []))
                last = e.endGroupHandle
            }
            if last == 0xFFFF || entries.isEmpty { return startCharacteristics(service: 0) }
            step = .services(next: last + 1)
            return [.request(.readByGroupTypeRequest(start: last + 1, end: 0xFFFF, type: .primaryService))]
        case .success(let other):
            return fail(.protocolViolation("expected Read By Group Type Response, got \(other)"))
        }
    }

    private mutating func startCharacteristics(service s: Int) -> [Action] {
        var s = s
        while s < database.services.count {
            let service = database.services[s]
            if service.startHandle < service.endHandle {
                step = .characteristics(service: s, next: service.startHandle)
                return [.request(.readByTypeRequest(start: service.startHandle, end: service.endHandle, type: .characteristic))]
            }
            s += 1
        }
        flat = database.services.indices.flatMap { s in database.services[s].characteristics.indices.map { (s, $0) } }
        return startDescriptors(index: 0)
    }

    private mutating func characteristics(_ result: Result<ATTPDU, ATTRequestError>, service s: Int, next: UInt16) -> [Action] {
        let service = database.services[s]
        switch result {
        case .failure(let error):
            if let actions = listError(error) { return actions }
            return finishService(s)
        case .success(.readByTypeResponse(let entries)):
            var last: UInt16 = 0
            for e in entries {
                guard e.value.count == 5 || e.value.count == 19, e.handle >= next, e.handle <= service.endHandle,
                      let uuid = BluetoothUUID(littleEndian: Array(e.value[3...])) else {
                    return fail(.protocolViolation("characteristic declaration at 0x\(hex(e.handle, width: 4))"))
                }
                let valueHandle = UInt16(e.value[1]) | UInt16(e.value[2]) << 8
                guard valueHandle > e.handle, valueHandle <= service.endHandle else {
                    return fail(.protocolViolation("characteristic value handle 0x\(hex(valueHandle, width: 4))"))
                }
                guard database.characteristics.count < limits.maxCharacteristics else {
                    return fail(.tooManyAttributes(limit: limits.maxCharacteristics))
                }
                database.services[s].characteristics.append(GATTCharacteristic(
                    uuid: uuid, declarationHandle: e.handle, valueHandle: valueHandle, endHandle: service.endHandle,
                    properties: e.value[0], descriptors: []))
                last = e.handle
            }
            if entries.isEmpty || last >= service.endHandle { return finishService(s) }
            step = .characteristics(service: s, next: last + 1)
            return [.request(.readByTypeRequest(start: last + 1, end: service.endHandle, type: .characteristic))]
        case .success(let other):
            return fail(.protocolViolation("expected Read By Type Response, got \(other)"))
        }
    }

    private mutating func finishService(_ s: Int) -> [Action] {
        // End handles: each characteristic ends before the next declaration, the last at the service end.
        var chars = database.services[s].characteristics
        for i in chars.indices.dropLast() { chars[i].endHandle = chars[i + 1].declarationHandle - 1 }
        database.services[s].characteristics = chars
        return startCharacteristics(service: s + 1)
    }

    private mutating func startDescriptors(index: Int) -> [Action] {
        var i = index
        while i < flat.count {
            let c = database.services[flat[i].s].characteristics[flat[i].c]
            if c.valueHandle < c.endHandle {
                step = .descriptors(characteristic: i, next: c.valueHandle + 1)
                return [.request(.findInformationRequest(start: c.valueHandle + 1, end: c.endHandle))]
            }
            i += 1
        }
        return [.discovered(database)] + startSubscriptions()
    }

    private mutating func descriptors(_ result: Result<ATTPDU, ATTRequestError>, index i: Int, next: UInt16) -> [Action] {
        let (s, c) = flat[i]
        let characteristic = database.services[s].characteristics[c]
        switch result {
        case .failure(let error):
            if let actions = listError(error) { return actions }
            return startDescriptors(index: i + 1)
        case .success(.findInformationResponse(let entries)):
            var last: UInt16 = 0
            for e in entries {
                guard e.handle >= next, e.handle <= characteristic.endHandle else {
                    return fail(.protocolViolation("descriptor at 0x\(hex(e.handle, width: 4))"))
                }
                guard database.characteristics.reduce(0, { $0 + $1.descriptors.count }) < limits.maxDescriptors else {
                    return fail(.tooManyAttributes(limit: limits.maxDescriptors))
                }
                database.services[s].characteristics[c].descriptors.append(GATTDescriptor(handle: e.handle, uuid: e.uuid))
                last = e.handle
            }
            if entries.isEmpty || last >= characteristic.endHandle { return startDescriptors(index: i + 1) }
            step = .descriptors(characteristic: i, next: last + 1)
            return [.request(.findInformationRequest(start: last + 1, end: characteristic.endHandle))]
        case .success(let other):
            return fail(.protocolViolation("expected Find Information Response, got \(other)"))
        }
    }

    private func characteristic(_ i: Int) -> GATTCharacteristic { database.services[flat[i].s].characteristics[flat[i].c] }

    private mutating func startSubscriptions() -> [Action] {
        var actions: [Action] = []
        for uuid in subscriptions {
            let matches = flat.indices.filter { characteristic($0).uuid == uuid }
            if matches.isEmpty { actions.append(.subscriptionFailed(uuid, reason: "characteristic not found")) }
            for i in matches {
                let c = characteristic(i)
                guard c.canNotify || c.canIndicate else {
                    actions.append(.subscriptionFailed(uuid, reason: "neither notify nor indicate")); continue
                }
                guard c.cccdHandle != nil else {
                    actions.append(.subscriptionFailed(uuid, reason: "no Client Characteristic Configuration descriptor")); continue
                }
                subscribeQueue.append((i, c.canNotify ? .notify : .indicate))
            }
        }
        for uuid in reads {
            let matches = flat.indices.filter { characteristic($0).uuid == uuid && characteristic($0).canRead }
            if matches.isEmpty { actions.append(.readFailed(uuid, .attributeNotFound)) }
            readQueue += matches
        }
        return actions + nextSubscription()
    }

    private mutating func nextSubscription() -> [Action] {
        guard !subscribeQueue.isEmpty else { return nextRead() }
        let (i, mode) = subscribeQueue.removeFirst()
        step = .subscribing(i, mode)
        return [.request(.writeRequest(handle: characteristic(i).cccdHandle!, value: [UInt8(mode.rawValue), 0]))]
    }

    private mutating func nextRead() -> [Action] {
        guard !readQueue.isEmpty else {
            step = .done
            return [.finished(database)]
        }
        let i = readQueue.removeFirst()
        step = .reading(i, value: [])
        return [.request(.readRequest(handle: characteristic(i).valueHandle))]
    }
}
