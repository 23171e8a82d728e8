import BluetoothCentral
/// Packet boundary flag of an HCI ACL data packet.
public enum ACLPacketBoundary: UInt8, Sendable {
    /// First fragment, not automatically flushable: what a host sends on LE.
    case firstNonFlushable = 0b00
    case continuing = 0b01
    /// First fragment, automatically flushable: what a controller sends on LE.
    case firstFlushable = 0b10
    /// A complete PDU (BR/EDR only; treated as a start).
    case complete = 0b11

    public var isStart: Bool { self != .continuing }
}

/// An HCI ACL data packet: 12-bit handle, PB and BC flags, 16-bit data length, data.
public struct ACLPacket: Equatable, Hashable, Sendable {
    public var handle: UInt16
    public var boundary: ACLPacketBoundary
    public var broadcast: UInt8
    public var data: [UInt8]

    public init(handle: UInt16, boundary: ACLPacketBoundary, broadcast: UInt8 = 0, data: [UInt8]) {
        self.handle = handle & 0x0FFF
        self.boundary = boundary
        self.broadcast = broadcast & 0x03
        self.data = data
    }

    /// The packet after the H4 type indicator. Data beyond 65535 bytes is cut.
    public var encoded: [UInt8] {
        let field = handle & 0x0FFF | UInt16(boundary.rawValue) << 12 | UInt16(broadcast) << 14
        let payload = data.prefix(0xFFFF)
        return [UInt8(field & 0xFF), UInt8(field >> 8), UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)] + payload
    }

    public var h4Packet: H4Packet { H4Packet(.acl, encoded) }

    /// Decodes a packet after the H4 type indicator; the length field must match the data exactly.
    public static func decode(_ bytes: [UInt8]) throws(BLEDecodeError) -> ACLPacket {
        var r = ByteReader(bytes, layer: .acl)
        let field = try r.uint16("handle and flags")
        let length = Int(try r.uint16("data length"))
        let data = try r.bytes(length, "data")
        try r.expectEnd()
        return ACLPacket(handle: field & 0x0FFF, boundary: ACLPacketBoundary(rawValue: UInt8((field >> 12) & 0x3))!,
                         broadcast: UInt8(field >> 14), data: data)
    }
}

/// Splits an L2CAP PDU into ACL packets no longer than the controller's announced data length.
public enum ACLFragmenter {
    /// The first fragment is `firstNonFlushable`, the rest `continuing`. An empty PDU gives one
    /// empty packet; a `maxDataLength` below 1 is treated as 1.
    public static func fragments(of pdu: [UInt8], handle: UInt16, maxDataLength: Int) -> [ACLPacket] {
        let size = max(1, maxDataLength)
        guard !pdu.isEmpty else { return [ACLPacket(handle: handle, boundary: .firstNonFlushable, data: [])] }
        return stride(from: 0, to: pdu.count, by: size).map { start in
            ACLPacket(handle: handle, boundary: start == 0 ? .firstNonFlushable : .continuing,
                      data: Array(pdu[start..<min(start + size, pdu.count)]))
        }
    }
}

/// Rebuilds L2CAP PDUs from ACL packets, per connection handle.
///
/// The PDU length comes from the L2CAP basic header (length + 4), not from the controller's
/// announced buffer size, so packets longer than announced are fine. A start fragment while a PDU
/// is incomplete drops the incomplete one (counted in `droppedPartialPDUs`). Bytes past the L2CAP
/// length in the last fragment are dropped (counted in `droppedTrailingBytes`). Errors reset that
/// handle's state and leave the others alone.
public struct ACLReassembler: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Largest L2CAP PDU (header included) accepted.
        public var maxPDULength: Int
        /// Largest number of handles with a PDU in progress.
        public var maxHandles: Int
        public init(maxPDULength: Int = 4 + 1024, maxHandles: Int = 16) {
            self.maxPDULength = maxPDULength
            self.maxHandles = maxHandles
        }
    }

    public let limits: Limits
    private var partial: [UInt16: [UInt8]] = [:]
    public private(set) var droppedPartialPDUs = 0
    public private(set) var droppedTrailingBytes = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    public var handlesInProgress: Set<UInt16> { Set(partial.keys) }

    /// Adds a packet; returns a complete PDU (basic header included) when one is finished.
    public mutating func receive(_ packet: ACLPacket) throws(BLEDecodeError) -> (handle: UInt16, pdu: [UInt8])? {
        let handle = packet.handle
        var buffer: [UInt8]
        if packet.boundary.isStart {
            if partial.removeValue(forKey: handle) != nil { droppedPartialPDUs += 1 }
            guard partial.count < limits.maxHandles else {
                throw BLEDecodeError(.acl, offset: 0, .tooLong(field: "handles in progress", length: partial.count + 1, limit: limits.maxHandles))
            }
            buffer = packet.data
        } else {
            guard let existing = partial.removeValue(forKey: handle) else {
                throw BLEDecodeError(.acl, offset: 0, .unexpected("continuation fragment for handle 0x\(hex(handle, width: 3)) without a start"))
            }
            buffer = existing + packet.data
        }
        guard buffer.count >= 4 else {
            partial[handle] = buffer
            return nil
        }
        let total = 4 + (Int(buffer[0]) | Int(buffer[1]) << 8)
        guard total <= limits.maxPDULength else {
            throw BLEDecodeError(.l2cap, offset: 0, .tooLong(field: "L2CAP PDU", length: total, limit: limits.maxPDULength))
        }
        if buffer.count < total {
            partial[handle] = buffer
            return nil
        }
        if buffer.count > total {
            droppedTrailingBytes += buffer.count - total
            buffer.removeLast(buffer.count - total)
        }
        return (handle, buffer)
    }

    /// Forgets a handle (disconnected).
    public mutating func drop(handle: UInt16) {
        partial.removeValue(forKey: handle)
    }
}

/// Controller ACL buffer accounting (host-to-controller flow control).
///
/// The controller announces a packet size and count (LE Read Buffer Size, or Read Buffer Size when
/// the LE values are 0). Each packet sent uses a credit; Number Of Completed Packets returns them
/// per handle. PDUs wait in per-handle queues served round-robin. On disconnection the packets of
/// that handle still in the controller count as completed (their buffers are freed) and its queue
/// is dropped.
public struct ACLFlowControl: Sendable {
    public enum EnqueueError: Error, Equatable, Sendable {
        case queueFull(handle: UInt16, limit: Int)
        case unknownHandle(UInt16)
    }

    public let maxDataLength: Int
    public let totalPackets: Int
    public let maxQueuedPacketsPerHandle: Int
    public private(set) var availableCredits: Int
    private var inFlight: [UInt16: Int] = [:]
    private var queues: [UInt16: [ACLPacket]] = [:]
    private var order: [UInt16] = []
    private var nextIndex = 0

    /// `maxDataLength` and `totalPackets` as announced (values below 1 become 1).
    public init(maxDataLength: Int, totalPackets: Int, maxQueuedPacketsPerHandle: Int = 256) {
        self.maxDataLength = max(1, maxDataLength)
        self.totalPackets = max(1, totalPackets)
        self.maxQueuedPacketsPerHandle = maxQueuedPacketsPerHandle
        self.availableCredits = self.totalPackets
    }

    /// LE buffers when the controller has them, else the shared BR/EDR buffers.
    public init(le: HCICommandReturn.LEBufferSize, shared: HCICommandReturn.BufferSize? = nil) {
        if le.aclDataPacketLength > 0 && le.totalACLDataPackets > 0 || shared == nil {
            self.init(maxDataLength: Int(le.aclDataPacketLength), totalPackets: Int(le.totalACLDataPackets))
        } else {
            self.init(maxDataLength: Int(shared!.aclDataPacketLength), totalPackets: Int(shared!.totalACLDataPackets))
        }
    }

    public func inFlight(handle: UInt16) -> Int { inFlight[handle] ?? 0 }
    public func queued(handle: UInt16) -> Int { queues[handle]?.count ?? 0 }

    /// Registers a connection handle (on connection complete).
    public mutating func open(handle: UInt16) {
        if queues[handle] == nil {
            queues[handle] = []
            order.append(handle)
        }
    }

    /// Fragments `pdu` for `handle` and returns the packets that may be sent now.
    public mutating func enqueue(_ pdu: [UInt8], handle: UInt16) throws(EnqueueError) -> [ACLPacket] {
        guard let queue = queues[handle] else { throw .unknownHandle(handle) }
        let fragments = ACLFragmenter.fragments(of: pdu, handle: handle, maxDataLength: maxDataLength)
        guard queue.count + fragments.count <= maxQueuedPacketsPerHandle else {
            throw .queueFull(handle: handle, limit: maxQueuedPacketsPerHandle)
        }
        queues[handle] = queue + fragments
        return pump()
    }

    /// Returns credits from a Number Of Completed Packets event; counts for unknown handles and
    /// counts above what is in flight are ignored.
    public mutating func completed(_ entries: [CompletedPackets]) -> [ACLPacket] {
        for e in entries {
            let flying = inFlight[e.handle] ?? 0
            let returned = min(flying, Int(e.count))
            inFlight[e.handle] = flying - returned
            availableCredits = min(totalPackets, availableCredits + returned)
        }
        return pump()
    }

    /// Drops a handle: its queue is discarded and its in-flight packets' credits come back.
    public mutating func close(handle: UInt16) -> [ACLPacket] {
        availableCredits = min(totalPackets, availableCredits + (inFlight.removeValue(forKey: handle) ?? 0))
        queues.removeValue(forKey: handle)
        if let i = order.firstIndex(of: handle) {
            order.remove(at: i)
            if nextIndex > i { nextIndex -= 1 }
        }
        return pump()
    }

    private mutating func pump() -> [ACLPacket] {
        var sent: [ACLPacket] = []
        var idle = 0
        while availableCredits > 0, !order.isEmpty, idle < order.count {
            if nextIndex >= order.count { nextIndex = 0 }
            let handle = order[nextIndex]
            nextIndex += 1
            guard var queue = queues[handle], !queue.isEmpty else {
                idle += 1
                continue
            }
            idle = 0
            sent.append(queue.removeFirst())
            queues[handle] = queue
            availableCredits -= 1
            inFlight[handle, default: 0] += 1
        }
        return sent
    }
}
