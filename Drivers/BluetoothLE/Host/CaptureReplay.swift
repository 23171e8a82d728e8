public import Foundation
public import BluetoothCentral
public import PacketCapture

/// Replays a capture of a host-controller link through the same pure layers the runtime uses:
/// HCI events, ACL reassembly per connection handle, L2CAP and ATT. The result is every GATT
/// value the host received (notifications, indications and reads of known characteristics) with
/// the capture's timestamps, per-connection facts, and statistics.
///
/// The capture is a btsnoop file (datalink H4 1002 or H1 1001), or a pcap or pcapng file (told
/// apart by their magic numbers) whose Bluetooth records have link type 201, Bluetooth HCI H4
/// with a 4-byte big-endian direction (0 sent by the host, 1 received; what Wireshark writes for
/// a Bluetooth HCI interface). Those records go through the same path as btsnoop H4 records, so a
/// capture gives the same values in any of the formats. Records of other link types (a pcapng
/// file can hold several interfaces) are counted as skipped (`Statistics.skippedRecords`) and
/// named by one line in `problems`; they are never fatal.
///
/// Per connection the replay learns what a GATT client learns from the discovery exchanges in the
/// capture: services (Read By Group Type, Find By Type Value), characteristic declarations (Read By
/// Type 0x2803) and descriptors (Find Information). The peer address comes from LE Connection
/// Complete (0x01) or LE Enhanced Connection Complete (0x0A).
///
/// Damage is handled at two levels:
/// - the file's structure (header, record framing or blocks, absurd lengths) stops the replay
///   with `CaptureReplayError.damaged` (btsnoop) or `.damagedCapture` (pcap, pcapng), which name
///   the byte offset and keep what the records before the damage gave;
/// - a packet that does not decode inside a well-formed file is counted (`decodeErrors`),
///   described (the first `maxProblems`, in `problems`) and skipped.
///
/// Captures from phones and adapters often begin after the connection or the discovery: values on
/// handles the capture never described are kept (without a characteristic) and counted, never
/// dropped silently.
///
/// Pure: `replay(_:)` works on bytes; only `replay(file:)` reads a file.
public struct CaptureReplay: Sendable {
    /// The kind of file replayed.
    public enum Format: Equatable, Sendable, CustomStringConvertible {
        case btsnoop(BTSnoop.Datalink)
        /// Classic pcap; its records are replayed when the file's link type is 201.
        case pcap
        /// pcapng; the records of its link type 201 interfaces are replayed.
        case pcapng

        /// "btsnoop H4", "btsnoop H1", "pcap" or "pcapng".
        public var description: String {
            switch self {
            case .btsnoop(let datalink): datalink == .h4 ? "btsnoop H4" : "btsnoop H1"
            case .pcap: "pcap"
            case .pcapng: "pcapng"
            }
        }
    }

    /// How a value reached the host.
    public enum ValueKind: String, Equatable, Sendable {
        case notification, indication, read
    }

    /// One attribute value the host received.
    public struct Value: Equatable, Sendable {
        public var kind: ValueKind
        /// Index of the link in `Result.connections`.
        public var connection: Int
        /// nil when the capture does not contain the link's Connection Complete.
        public var peer: DeviceAddress?
        public var valueHandle: UInt16
        /// nil when the capture does not show which characteristic the handle belongs to.
        public var characteristic: BluetoothUUID?
        public var value: [UInt8]
        /// The capture timestamp of the record that completed the value.
        public var receivedAt: Date
        /// Index of that record (0 = the first record of the file, skipped records included).
        public var record: Int

        /// The value as the runtime hands it to subscribers; nil without a peer or characteristic.
        public var notification: GATTNotification? {
            guard let peer, let characteristic else { return nil }
            return GATTNotification(peer: peer, characteristic: characteristic, valueHandle: valueHandle,
                                    value: value, receivedAt: receivedAt)
        }
    }

    /// One link as seen in the capture. A handle reused after a disconnection is a new link.
    public struct Connection: Equatable, Sendable {
        public var handle: UInt16
        /// From LE (Enhanced) Connection Complete; nil when the capture began after the connection.
        public var peer: DeviceAddress?
        /// 0 central, 1 peripheral; nil when unknown.
        public var role: UInt8?
        public var connectedAt: Date?
        public var disconnectedAt: Date?
        /// The reason of Disconnection Complete; nil when the link ended otherwise (an HCI Reset,
        /// the end of the capture) or is still up at the end.
        public var disconnectReason: HCIStatus?
        /// ATT_MTU after an MTU exchange seen in the capture (23 without one).
        public var mtu: UInt16 = 23
        public var notifications = 0
        public var indications = 0
        public var reads = 0
        /// Notifications and indications on handles no discovery in the capture described.
        public var valuesOnUnknownHandles = 0

        private var services: [UInt16: ServiceEntry] = [:]
        private var declarations: [UInt16: Declaration] = [:]
        private var descriptorUUIDs: [UInt16: BluetoothUUID] = [:]
        /// Value handle -> characteristic, from declarations and Read By Type with a characteristic UUID.
        private var characteristicUUIDs: [UInt16: BluetoothUUID] = [:]

        struct ServiceEntry: Equatable, Sendable { var end: UInt16; var uuid: BluetoothUUID }
        struct Declaration: Equatable, Sendable { var properties: UInt8; var valueHandle: UInt16; var uuid: BluetoothUUID }

        init(handle: UInt16, peer: DeviceAddress? = nil, role: UInt8? = nil, connectedAt: Date? = nil) {
            self.handle = handle
            self.peer = peer
            self.role = role
            self.connectedAt = connectedAt
        }

        /// The characteristic whose value handle this is, as far as the capture shows.
        public func characteristic(valueHandle: UInt16) -> BluetoothUUID? { characteristicUUIDs[valueHandle] }

        /// The services, characteristics and descriptors seen in the capture's discovery
        /// exchanges. Characteristics outside every known service are left out here but still
        /// name their values.
        public var database: GATTDatabase {
            let sortedDeclarations = declarations.sorted { $0.key < $1.key }
            let sortedDescriptors = descriptorUUIDs.sorted { $0.key < $1.key }
            let list = services.sorted { $0.key < $1.key }.map { start, entry -> GATTService in
                let inside = sortedDeclarations.filter { $0.key > start && $0.key <= entry.end }
                let characteristics = inside.indices.map { i -> GATTCharacteristic in
                    let (handle, d) = inside[i]
                    let end = i + 1 < inside.count ? inside[i + 1].key - 1 : entry.end
                    let descriptors = sortedDescriptors.filter { $0.key > d.valueHandle && $0.key <= end }
                        .map { GATTDescriptor(handle: $0.key, uuid: $0.value) }
                    return GATTCharacteristic(uuid: d.uuid, declarationHandle: handle, valueHandle: d.valueHandle,
                                              endHandle: end, properties: d.properties, descriptors: descriptors)
                }
                return GATTService(uuid: entry.uuid, startHandle: start, endHandle: entry.end, characteristics: characteristics)
            }
            return GATTDatabase(services: list)
        }

        mutating func learnService(start: UInt16, end: UInt16, uuid: BluetoothUUID) {
            guard end >= start else { return }
            services[start] = ServiceEntry(end: end, uuid: uuid)
        }

        mutating func learnDeclaration(handle: UInt16, _ value: [UInt8]) {
            guard value.count == 5 || value.count == 19, let uuid = BluetoothUUID(littleEndian: Array(value[3...])) else { return }
            let valueHandle = UInt16(value[1]) | UInt16(value[2]) << 8
            guard valueHandle > handle else { return }
            declarations[handle] = Declaration(properties: value[0], valueHandle: valueHandle, uuid: uuid)
            characteristicUUIDs[valueHandle] = uuid
        }

        mutating func learnDescriptor(handle: UInt16, uuid: BluetoothUUID) {
            // Find Information over a whole range also lists declarations and values: keep descriptors only.
            let declarationTypes: Set<BluetoothUUID> = [.primaryService, .secondaryService, .include, .characteristic]
            guard !declarationTypes.contains(uuid), characteristicUUIDs[handle] == nil else { return }
            descriptorUUIDs[handle] = uuid
        }

        mutating func learnValueHandle(_ handle: UInt16, characteristic uuid: BluetoothUUID) {
            characteristicUUIDs[handle] = uuid
        }
    }

    /// Counts over the whole replay.
    public struct Statistics: Equatable, Sendable {
        /// Records replayed (skipped records not included).
        public var records = 0
        /// HCI packets taken from the records (commands, events, ACL and others).
        public var packets = 0
        public var commands = 0
        public var events = 0
        public var aclPackets = 0
        /// Records the writer cut short (included length below the original length); skipped.
        public var truncatedRecords = 0
        /// The largest cumulative drop count a record carried (packets the writer lost).
        public var droppedByWriter: UInt32 = 0
        public var connections = 0
        public var notifications = 0
        public var indications = 0
        /// Read (and Read Blob) results of known characteristics.
        public var reads = 0
        /// Notifications and indications on handles the capture never described.
        public var valuesOnUnknownHandles = 0
        /// Values on links whose Connection Complete is not in the capture (no peer address).
        public var valuesWithoutPeer = 0
        /// Packets that did not decode at some layer (skipped).
        public var decodeErrors = 0
        /// pcap and pcapng records of link types other than 201 (Bluetooth H4 with direction):
        /// not replayed.
        public var skippedRecords = 0
    }

    /// A packet that did not decode, or the first record skipped for its link type: where, and why.
    public struct Problem: Equatable, Sendable, CustomStringConvertible {
        /// Index of the record (0 = the first record of the file).
        public var record: Int
        /// Byte offset of the record in the file.
        public var offset: Int
        public var reason: String
        public var description: String { "record \(record) (byte \(offset)): \(reason)" }
    }

    public struct Result: Equatable, Sendable {
        /// What kind of file it was; nil when its header could not be read.
        public var format: Format?
        /// Every value received, in capture order.
        public var values: [Value] = []
        /// Every link, in the order they appeared.
        public var connections: [Connection] = []
        public var statistics = Statistics()
        /// The first `maxProblems` decode problems, in record order, and one line at the first
        /// record skipped for its link type when any was (saying how many were).
        public var problems: [Problem] = []
        public var firstRecordAt: Date?
        public var lastRecordAt: Date?

        /// Notifications and indications as a subscriber of the runtime receives them, in capture
        /// order (values without a peer address or characteristic are left out, and counted).
        public var notifications: [GATTNotification] {
            values.filter { $0.kind != .read }.compactMap(\.notification)
        }
    }

    /// How many decode problems are described (all of them are counted).
    public static let maxProblems = 10

    // MARK: - Entry points

    /// Replays a whole capture held in memory: pcap and pcapng by their magic numbers, anything
    /// else as btsnoop.
    public static func replay(_ bytes: [UInt8]) throws(CaptureReplayError) -> Result {
        if CaptureReader.isCapture(bytes) { return try replayPacketCapture(bytes) }
        let reader: BTSnoop.Reader
        do {
            reader = try BTSnoop.Reader(bytes)
        } catch {
            throw .damaged(error, partial: Result(format: nil))
        }
        var replay = CaptureReplay(format: .btsnoop(reader.datalink), datalink: reader.datalink)
        var records = reader
        var offset = 16
        var index = 0
        while true {
            let record: BTSnoop.Record
            do {
                guard let next = try records.next() else { break }
                record = next
            } catch {
                throw .damaged(error, partial: replay.finish())
            }
            replay.receive(record, index: index, offset: offset)
            offset += 24 + record.data.count
            index += 1
        }
        return replay.finish()
    }

    /// Replays a pcap or pcapng file: link type 201 records as H4 packets, the others skipped.
    private static func replayPacketCapture(_ bytes: [UInt8]) throws(CaptureReplayError) -> Result {
        var reader: CaptureReader
        do {
            reader = try CaptureReader(bytes)
        } catch {
            throw .damagedCapture(error, partial: Result(format: nil))
        }
        var replay = CaptureReplay(format: reader.format == .pcap ? .pcap : .pcapng, datalink: .h4)
        var index = 0
        while true {
            let record: CaptureRecord
            do {
                guard let next = try reader.next() else { break }
                record = next
            } catch {
                throw .damagedCapture(error, partial: replay.finish())
            }
            replay.receive(record, index: index, offset: reader.recordOffset)
            index += 1
        }
        return replay.finish()
    }

    /// Reads and replays the capture at `path`.
    public static func replay(file path: String) throws(CaptureReplayError) -> Result {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw .unreadable(path: path, reason: (error as NSError).localizedDescription)
        }
        return try replay(Array(data))
    }

    // MARK: - State

    /// What an outstanding client request asked for, to read its response.
    private enum Request {
        case services(BluetoothUUID)
        case readByType(BluetoothUUID)
        case findInformation
        case servicesByUUID(BluetoothUUID)
        case read(handle: UInt16)
        case readBlob(handle: UInt16, offset: UInt16)
        case other
    }

    /// A Read result being assembled from Read Blob responses.
    private struct LongRead {
        var handle: UInt16
        var bytes: [UInt8]
        var receivedAt: Date
        var record: Int
    }

    /// Protocol state of an open link.
    private struct Link {
        var index: Int
        /// The host's outstanding request (ATT allows one per direction).
        var pending: Request?
        var mtuRequestedByHost: UInt16?
        var mtuRequestedByPeer: UInt16?
        var longRead: LongRead?
    }

    private var result: Result
    /// How records carry packets: H4 (pcap and pcapng too) or H1.
    private let datalink: BTSnoop.Datalink
    /// Where the problem line about skipped records is in `result.problems`.
    private var skipProblem: Int?
    private var links: [UInt16: Link] = [:]
    private var fromController = ACLReassembler()
    private var toController = ACLReassembler()
    /// Where the record being replayed is, for values and problems.
    private var now = Date(timeIntervalSince1970: 0)
    private var recordIndex = 0
    private var recordOffset = 0

    init(format: Format, datalink: BTSnoop.Datalink) {
        result = Result(format: format)
        self.datalink = datalink
    }

    /// Ends open reads and returns the result with values in capture order.
    mutating func finish() -> Result {
        for handle in links.keys.sorted() { finishLongRead(handle: handle) }
        var out = result
        if let line = skipProblem {
            let skipped = result.statistics.skippedRecords
            out.problems[line].reason += "; \(skipped) record\(skipped == 1 ? "" : "s") of other link types skipped"
        }
        out.values = result.values.enumerated()
            .sorted { ($0.element.record, $0.offset) < ($1.element.record, $1.offset) }
            .map(\.element)
        return out
    }

    // MARK: - Records and HCI

    mutating func receive(_ record: BTSnoop.Record, index: Int, offset: Int) {
        begin(index: index, offset: offset, unixMicroseconds: record.unixMicroseconds)
        result.statistics.droppedByWriter = max(result.statistics.droppedByWriter, record.cumulativeDrops)
        guard !record.isTruncated else {
            result.statistics.truncatedRecords += 1
            return
        }
        let packet: H4Packet
        do {
            packet = try record.packet(datalink: datalink)
        } catch {
            return problem("\(error)")
        }
        result.statistics.packets += 1
        switch packet.type {
        case .command:
            result.statistics.commands += 1
            command(packet.bytes)
        case .event:
            result.statistics.events += 1
            event(packet.bytes)
        case .acl:
            result.statistics.aclPackets += 1
            acl(packet.bytes, fromController: record.received)
        case .sco, .iso:
            break
        }
    }

    /// A pcap or pcapng record: link type 201 is a 4-byte big-endian direction (bit 0 set when
    /// the controller sent the packet) and an H4 packet, replayed as the btsnoop H4 record it
    /// would be; other link types are skipped.
    mutating func receive(_ record: CaptureRecord, index: Int, offset: Int) {
        guard record.link == .bluetoothHCIH4WithPHDR else {
            result.statistics.skippedRecords += 1
            if skipProblem == nil {
                skipProblem = result.problems.count
                result.problems.append(Problem(record: index, offset: offset,
                                               reason: "link type \(record.link) is not Bluetooth H4 with direction (201)"))
            }
            return
        }
        let (micro, remainder) = record.timestampNanoseconds.quotientAndRemainder(dividingBy: 1000)
        let unixMicroseconds = remainder < 0 ? micro - 1 : micro
        guard record.data.count >= 4 else {
            begin(index: index, offset: offset, unixMicroseconds: unixMicroseconds)
            if record.isTruncated {
                result.statistics.truncatedRecords += 1
                return
            }
            return problem("record of \(record.data.count) bytes, shorter than its 4-byte direction")
        }
        let direction = record.data.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let packet = Array(record.data.dropFirst(4))
        receive(BTSnoop.Record(received: direction & 1 != 0, isCommandOrEvent: packet.first == 0x01 || packet.first == 0x04,
                               timestamp: unixMicroseconds + BTSnoop.unixEpochOffset, data: packet,
                               originalLength: record.originalLength - min(record.originalLength, 4)),
                index: index, offset: offset)
    }

    /// Where and when the record being replayed is.
    private mutating func begin(index: Int, offset: Int, unixMicroseconds: Int64) {
        recordIndex = index
        recordOffset = offset
        now = Date(timeIntervalSince1970: Double(unixMicroseconds) / 1e6)
        result.statistics.records += 1
        if result.firstRecordAt == nil { result.firstRecordAt = now }
        result.lastRecordAt = now
    }

    private mutating func problem(_ reason: String) {
        result.statistics.decodeErrors += 1
        // The line about skipped records does not count against the limit.
        if result.problems.count - (skipProblem == nil ? 0 : 1) < Self.maxProblems {
            result.problems.append(Problem(record: recordIndex, offset: recordOffset, reason: reason))
        }
    }

    private mutating func command(_ bytes: [UInt8]) {
        guard bytes.count >= 3 else { return problem("HCI command shorter than its header") }
        // After an HCI Reset the controller has forgotten every link, without Disconnection Complete.
        if HCIOpcode(rawValue: UInt16(bytes[0]) | UInt16(bytes[1]) << 8) == .reset {
            for handle in links.keys.sorted() { linkDown(handle: handle, reason: nil) }
            fromController = ACLReassembler()
            toController = ACLReassembler()
        }
    }

    private mutating func event(_ bytes: [UInt8]) {
        // Only the events that open and close links matter here; the rest is not decoded, so an
        // advertising report this decoder finds odd does not count as a problem.
        guard let code = bytes.first else { return problem("empty HCI event") }
        let isLinkEvent = code == HCIEvent.Code.disconnectionComplete
            || (code == HCIEvent.Code.leMeta && bytes.count >= 3 && (bytes[2] == 0x01 || bytes[2] == 0x0A))
        guard isLinkEvent else { return }
        let event: HCIEvent
        do { event = try HCIEvent.decode(bytes) } catch { return problem("\(error)") }
        switch event {
        case .le(.connectionComplete(let cc)) where cc.status.isSuccess:
            if links[cc.handle] != nil { linkDown(handle: cc.handle, reason: nil) }
            open(Connection(handle: cc.handle, peer: cc.peer, role: cc.role, connectedAt: now))
        case .disconnectionComplete(let status, let handle, let reason) where status.isSuccess:
            linkDown(handle: handle, reason: reason)
        default:
            break
        }
    }

    @discardableResult
    private mutating func open(_ connection: Connection) -> Link {
        let link = Link(index: result.connections.count)
        result.connections.append(connection)
        result.statistics.connections += 1
        links[connection.handle] = link
        return link
    }

    private mutating func linkDown(handle: UInt16, reason: HCIStatus?) {
        finishLongRead(handle: handle)
        guard let link = links.removeValue(forKey: handle) else { return }
        result.connections[link.index].disconnectedAt = now
        result.connections[link.index].disconnectReason = reason
        fromController.drop(handle: handle)
        toController.drop(handle: handle)
    }

    // MARK: - ACL, L2CAP

    private mutating func acl(_ bytes: [UInt8], fromController received: Bool) {
        let pdu: (handle: UInt16, pdu: [UInt8])?
        do {
            let packet = try ACLPacket.decode(bytes)
            pdu = received ? try fromController.receive(packet) : try toController.receive(packet)
        } catch {
            return problem("\(error)")
        }
        guard let (handle, bytes) = pdu else { return }
        let frame: L2CAPFrame
        do { frame = try L2CAPFrame.decode(bytes) } catch { return problem("\(error)") }
        guard frame.channel == L2CAPFrame.attChannel else { return }
        let att: ATTPDU
        do { att = try ATTPDU.decode(frame.payload) } catch { return problem("\(error)") }
        if links[handle] == nil {
            // The capture began after this link was made.
            open(Connection(handle: handle))
        }
        if received { fromPeer(att, handle: handle) } else { fromHost(att, handle: handle) }
    }

    // MARK: - ATT

    private mutating func fromHost(_ pdu: ATTPDU, handle: UInt16) {
        var continuesLongRead = false
        if case .readBlobRequest(let h, _) = pdu { continuesLongRead = links[handle]?.longRead?.handle == h }
        // Any other request means the host is done with the value it was reading.
        if ATTPDU.isRequest(pdu.opcode) && !continuesLongRead { finishLongRead(handle: handle) }
        guard var link = links[handle] else { return }
        switch pdu {
        case .readByGroupTypeRequest(_, _, let type): link.pending = .services(type)
        case .readByTypeRequest(_, _, let type): link.pending = .readByType(type)
        case .findInformationRequest: link.pending = .findInformation
        case .readRequest(let h): link.pending = .read(handle: h)
        case .readBlobRequest(let h, let offset): link.pending = .readBlob(handle: h, offset: offset)
        case .exchangeMTURequest(let mtu):
            link.pending = .other
            link.mtuRequestedByHost = mtu
        case .exchangeMTUResponse(let mtu):
            // The host answered the peer's exchange.
            if let theirs = link.mtuRequestedByPeer { setMTU(link, min(theirs, mtu)) }
        case .other(ATTPDU.Opcode.findByTypeValueRequest, let parameters):
            // Start, end, attribute type, value: primary services by UUID when the type is 0x2800.
            link.pending = .other
            if parameters.count > 6, parameters[4] == 0x00, parameters[5] == 0x28,
               let uuid = BluetoothUUID(littleEndian: Array(parameters[6...])) {
                link.pending = .servicesByUUID(uuid)
            }
        default:
            if ATTPDU.isRequest(pdu.opcode) { link.pending = .other }
        }
        links[handle] = link
    }

    private mutating func fromPeer(_ pdu: ATTPDU, handle: UInt16) {
        guard var link = links[handle] else { return }
        var request: Request?
        if Self.isResponse(pdu.opcode) {
            request = link.pending
            link.pending = nil
            links[handle] = link
        }
        let i = link.index
        let mtu = Int(result.connections[i].mtu)
        switch pdu {
        case .handleValueNotification(let h, let value):
            emit(.notification, handle: handle, valueHandle: h, value: value)
        case .handleValueIndication(let h, let value):
            emit(.indication, handle: handle, valueHandle: h, value: value)
        case .exchangeMTURequest(let theirs):
            links[handle]?.mtuRequestedByPeer = theirs
        case .exchangeMTUResponse(let theirs):
            if let ours = link.mtuRequestedByHost { setMTU(link, min(ours, theirs)) }
        case .readByGroupTypeResponse(let entries):
            guard case .services(let type) = request, type == .primaryService || type == .secondaryService else { break }
            for e in entries {
                guard let uuid = BluetoothUUID(littleEndian: e.value) else { continue }
                result.connections[i].learnService(start: e.handle, end: e.endGroupHandle, uuid: uuid)
            }
        case .other(0x07, let parameters):
            // Find By Type Value Response: (found handle, group end handle) pairs.
            guard case .servicesByUUID(let uuid) = request else { break }
            for start in stride(from: 0, to: parameters.count - parameters.count % 4, by: 4) {
                let first = UInt16(parameters[start]) | UInt16(parameters[start + 1]) << 8
                let end = UInt16(parameters[start + 2]) | UInt16(parameters[start + 3]) << 8
                result.connections[i].learnService(start: first, end: end, uuid: uuid)
            }
        case .readByTypeResponse(let entries):
            guard case .readByType(let type) = request else { break }
            if type == .characteristic {
                for e in entries { result.connections[i].learnDeclaration(handle: e.handle, e.value) }
            } else if ![BluetoothUUID.include, .primaryService, .secondaryService].contains(type) {
                // Read Using Characteristic UUID: values of that characteristic.
                for e in entries {
                    result.connections[i].learnValueHandle(e.handle, characteristic: type)
                    emit(.read, handle: handle, valueHandle: e.handle, value: e.value)
                }
            }
        case .findInformationResponse(let entries):
            guard case .findInformation = request else { break }
            for e in entries { result.connections[i].learnDescriptor(handle: e.handle, uuid: e.uuid) }
        case .readResponse(let bytes):
            guard case .read(let h) = request else { break }
            links[handle]?.longRead = LongRead(handle: h, bytes: bytes, receivedAt: now, record: recordIndex)
            // A response that fills ATT_MTU - 1 may continue with Read Blob.
            if bytes.count < mtu - 1 { finishLongRead(handle: handle) }
        case .readBlobResponse(let bytes):
            guard case .readBlob(let h, let offset) = request, var long = link.longRead, long.handle == h,
                  Int(offset) == long.bytes.count else { break }
            long.bytes += bytes
            long.receivedAt = now
            long.record = recordIndex
            links[handle]?.longRead = long
            if bytes.count < mtu - 1 || long.bytes.count >= 512 { finishLongRead(handle: handle) }
        case .errorResponse:
            // Invalid Offset or Attribute Not Long end a read whose last response was exactly full.
            if case .readBlob = request { finishLongRead(handle: handle) }
        default:
            break
        }
    }

    private mutating func setMTU(_ link: Link, _ mtu: UInt16) {
        result.connections[link.index].mtu = max(23, mtu)
    }

    private mutating func finishLongRead(handle: UInt16) {
        guard var link = links[handle], let long = link.longRead else { return }
        link.longRead = nil
        links[handle] = link
        emit(.read, handle: handle, valueHandle: long.handle, value: long.bytes, receivedAt: long.receivedAt, record: long.record)
    }

    /// Records a value. Reads of handles that are no known characteristic (descriptors, or a
    /// capture without discovery) are not readings and are left out.
    private mutating func emit(_ kind: ValueKind, handle: UInt16, valueHandle: UInt16, value: [UInt8],
                               receivedAt: Date? = nil, record: Int? = nil) {
        guard let link = links[handle] else { return }
        let connection = result.connections[link.index]
        let characteristic = connection.characteristic(valueHandle: valueHandle)
        if kind == .read && characteristic == nil { return }
        switch kind {
        case .notification:
            result.statistics.notifications += 1
            result.connections[link.index].notifications += 1
        case .indication:
            result.statistics.indications += 1
            result.connections[link.index].indications += 1
        case .read:
            result.statistics.reads += 1
            result.connections[link.index].reads += 1
        }
        if characteristic == nil {
            result.statistics.valuesOnUnknownHandles += 1
            result.connections[link.index].valuesOnUnknownHandles += 1
        }
        if connection.peer == nil { result.statistics.valuesWithoutPeer += 1 }
        result.values.append(Value(kind: kind, connection: link.index, peer: connection.peer, valueHandle: valueHandle,
                                   characteristic: characteristic, value: value, receivedAt: receivedAt ?? now,
                                   record: record ?? recordIndex))
    }

    /// Responses end the host's outstanding request.
    private static func isResponse(_ opcode: UInt8) -> Bool {
        switch opcode {
        case ATTPDU.Opcode.errorResponse, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21:
            true
        default:
            false
        }
    }
}

/// Why a capture could not be replayed (completely).
public enum CaptureReplayError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// The btsnoop structure is damaged at `error.offset` (a byte offset in the file); `partial`
    /// holds what the records before the damage gave (nothing, and no `format`, when the header
    /// is damaged).
    case damaged(BLEDecodeError, partial: CaptureReplay.Result)
    /// The pcap or pcapng structure is damaged at `error.offset`; `partial` as for `damaged`.
    case damagedCapture(CaptureError, partial: CaptureReplay.Result)

    /// The byte offset of the damage.
    public var offset: Int? {
        switch self {
        case .damaged(let e, _): e.offset
        case .damagedCapture(let e, _): e.offset
        case .unreadable: nil
        }
    }

    /// What the records before the damage gave; nil when the file could not be read. Its
    /// `format` is nil when the damage is in the file's header.
    public var partial: CaptureReplay.Result? {
        switch self {
        case .damaged(_, let partial), .damagedCapture(_, let partial): partial
        case .unreadable: nil
        }
    }

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .damaged(let e, _):
            switch e.reason {
            case .truncated("identification pattern", _, 0):
                return "empty file, not a btsnoop capture"
            case .invalidValue("identification pattern", _), .truncated("identification pattern", _, _):
                return "not a btsnoop capture (nor pcap or pcapng): no \"btsnoop\\0\" identification pattern or pcap magic number at byte 0"
            case .invalidValue("datalink type", let value):
                return "byte \(e.offset): unsupported btsnoop datalink type \(value) (HealthGate reads 1001 H1 and 1002 H4)"
            default:
                // BLEDecodeError reads "btsnoop at offset N: what"; keep the what.
                let text = e.description
                let what = text.range(of: ": ").map { String(text[$0.upperBound...]) } ?? text
                return "damaged btsnoop capture at byte \(e.offset): \(what)"
            }
        case .damagedCapture(let e, _):
            return "damaged \(e.format.rawValue) capture at byte \(e.offset): \(e.reason)"
        }
    }
}
