/// One Linux usbmon event, as a record of link type 189 (48-byte header) or 220 (64-byte header)
/// carries it: the header of the kernel's binary usbmon interface (Documentation/usb/usbmon.rst)
/// and the data captured with the event.
///
/// The header, with byte offsets:
///
///     0 id u64              URB tag, the same for its submission and its completion
///     8 type u8             'S' submission, 'C' completion, 'E' error
///     9 xfer_type u8        0 isochronous, 1 interrupt, 2 control, 3 bulk
///    10 epnum u8            endpoint number, bit 0x80 set for IN
///    11 devnum u8           device address
///    12 busnum u16          bus number
///    14 flag_setup s8       0 when the setup bytes hold a control setup packet
///    15 flag_data s8        0 when data was captured, else a character saying why not
///    16 ts_sec s64          time of the event
///    24 ts_usec s32
///    28 status s32          0 or a negative errno (-115 EINPROGRESS for submissions)
///    32 length u32          the URB's length: requested on submission, actual on completion
///    36 len_cap u32         how many data bytes follow the header
///    40 setup[8]            the setup packet, or for isochronous transfers error_count s32
///                           and numdesc s32
///    48 interval s32        (64-byte header only) interrupt and isochronous interval
///    52 start_frame s32     isochronous start frame
///    56 xfer_flags u32      the URB's transfer flags
///    60 ndesc u32           isochronous descriptors
///
/// Byte order: the header is in the byte order of the machine that captured it, which this type
/// takes to be little-endian (Linux on x86 and ARM, where captures of USB sticks are made); a
/// big-endian machine's capture reads wrong. For isochronous transfers in the 64-byte format,
/// `ndesc` descriptors of 16 bytes precede the data and are left at the start of `data`.
public struct USBMonPacket: Hashable, Sendable {
    public enum Event: UInt8, Hashable, Sendable {
        case submit = 0x53  // "S"
        case complete = 0x43  // "C"
        case error = 0x45  // "E"
    }

    public enum TransferType: UInt8, Hashable, Sendable {
        case isochronous = 0
        case interrupt = 1
        case control = 2
        case bulk = 3
    }

    /// The URB tag: a submission and its completion share it.
    public var id: UInt64
    public var event: Event
    public var transferType: TransferType
    /// The endpoint number with the direction bit 0x80 (set for IN).
    public var endpoint: UInt8
    /// The device address on its bus.
    public var device: UInt8
    public var bus: UInt16
    /// flag_setup: 0 when `setupBytes` hold a control setup packet, otherwise a character
    /// (usually "-").
    public var setupFlag: UInt8
    /// flag_data: 0 when the data was captured, otherwise a character saying why not ("<" for an
    /// IN submission, ">" for an OUT completion, among others).
    public var dataFlag: UInt8
    public var timestampSeconds: Int64
    public var timestampMicroseconds: Int32
    /// 0, or a negative errno.
    public var status: Int32
    /// The URB's length: what was asked for on submission, what was transferred on completion.
    public var length: UInt32
    /// The header's count of data bytes captured.
    public var capturedLength: UInt32
    /// The 8 bytes at offset 40: a setup packet, isochronous counts, or what the kernel left.
    public var setupBytes: [UInt8]
    /// Only in the 64-byte header (0 otherwise).
    public var interval: Int32
    public var startFrame: Int32
    public var transferFlags: UInt32
    public var descriptorCount: UInt32
    /// The captured data: the record's bytes after the header, at most `capturedLength` of them
    /// (fewer when the capture's snapshot length cut the record).
    public var data: [UInt8]

    /// The length of the header: 48 for link type 189, 64 for 220.
    public static func headerLength(mmapped: Bool) -> Int { mmapped ? 64 : 48 }

    /// An event built field by field (tests, fixture generators). `length` defaults to the
    /// data's length; `dataFlag` is 0 with data, otherwise "<" for IN endpoints and ">" for OUT.
    public init(id: UInt64, event: Event, transferType: TransferType, endpoint: UInt8, device: UInt8, bus: UInt16,
                status: Int32 = 0, length: UInt32? = nil, setup: [UInt8]? = nil, data: [UInt8] = [],
                timestampSeconds: Int64 = 0, timestampMicroseconds: Int32 = 0,
                interval: Int32 = 0, startFrame: Int32 = 0, transferFlags: UInt32 = 0, descriptorCount: UInt32 = 0) {
        self.id = id
        self.event = event
        self.transferType = transferType
        self.endpoint = endpoint
        self.device = device
        self.bus = bus
        self.status = status
        self.length = length ?? UInt32(clamping: data.count)
        self.capturedLength = UInt32(clamping: data.count)
        self.setupFlag = setup == nil ? UInt8(ascii: "-") : 0
        self.setupBytes = Self.eightBytes(setup ?? [])
        self.dataFlag = !data.isEmpty ? 0 : endpoint & 0x80 != 0 ? UInt8(ascii: "<") : UInt8(ascii: ">")
        self.data = data
        self.timestampSeconds = timestampSeconds
        self.timestampMicroseconds = timestampMicroseconds
        self.interval = interval
        self.startFrame = startFrame
        self.transferFlags = transferFlags
        self.descriptorCount = descriptorCount
    }

    /// Parses a record of link type 189 or 220. Errors name offsets in the record's data.
    public init(_ record: CaptureRecord) throws(CaptureError) {
        let mmapped: Bool
        switch record.link {
        case .usbLinux: mmapped = false
        case .usbLinuxMMapped: mmapped = true
        default: throw CaptureError(.usbmon, offset: 0, .invalidValue(field: "link type", value: Int(record.linkType)))
        }
        let d = record.data
        let header = Self.headerLength(mmapped: mmapped)
        guard d.count >= header else {
            throw CaptureError(.usbmon, offset: 0, .truncated(field: "usbmon header", needed: header, available: d.count))
        }
        guard let event = Event(rawValue: d[8]) else {
            throw CaptureError(.usbmon, offset: 8, .invalidValue(field: "event type", value: Int(d[8])))
        }
        guard let transferType = TransferType(rawValue: d[9]) else {
            throw CaptureError(.usbmon, offset: 9, .invalidValue(field: "transfer type", value: Int(d[9])))
        }
        self.event = event
        self.transferType = transferType
        id = Self.little(d, 0, 8)
        endpoint = d[10]
        device = d[11]
        bus = UInt16(Self.little(d, 12, 2))
        setupFlag = d[14]
        dataFlag = d[15]
        timestampSeconds = Int64(bitPattern: Self.little(d, 16, 8))
        timestampMicroseconds = Int32(bitPattern: UInt32(Self.little(d, 24, 4)))
        status = Int32(bitPattern: UInt32(Self.little(d, 28, 4)))
        length = UInt32(Self.little(d, 32, 4))
        capturedLength = UInt32(Self.little(d, 36, 4))
        setupBytes = Array(d[40..<48])
        interval = mmapped ? Int32(bitPattern: UInt32(Self.little(d, 48, 4))) : 0
        startFrame = mmapped ? Int32(bitPattern: UInt32(Self.little(d, 52, 4))) : 0
        transferFlags = mmapped ? UInt32(Self.little(d, 56, 4)) : 0
        descriptorCount = mmapped ? UInt32(Self.little(d, 60, 4)) : 0
        data = Array(d[header..<(header + min(d.count - header, Int(capturedLength)))])
    }

    /// True for IN endpoints (device to host).
    public var isIn: Bool { endpoint & 0x80 != 0 }

    /// The control setup packet, when the header carries one (`setupFlag` 0). Setting it sets
    /// `setupFlag` (0, or "-" for nil) and `setupBytes`.
    public var setup: [UInt8]? {
        get { setupFlag == 0 ? setupBytes : nil }
        set {
            setupFlag = newValue == nil ? UInt8(ascii: "-") : 0
            setupBytes = Self.eightBytes(newValue ?? [])
        }
    }

    /// For isochronous transfers: the error count and the descriptor count in `setupBytes`.
    public var isoErrorCount: Int32 { Int32(bitPattern: UInt32(Self.little(Self.eightBytes(setupBytes), 0, 4))) }
    public var isoDescriptorCount: Int32 { Int32(bitPattern: UInt32(Self.little(Self.eightBytes(setupBytes), 4, 4))) }

    /// The header's time in nanoseconds since the Unix epoch (clamped to the range of `Int64`).
    public var timestampNanoseconds: Int64 {
        let (seconds, overflow) = timestampSeconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return timestampSeconds < 0 ? .min : .max }
        let (sum, overflowSum) = seconds.addingReportingOverflow(Int64(timestampMicroseconds) * 1000)
        return overflowSum ? (seconds < 0 ? .min : .max) : sum
    }

    /// The header (48 or 64 bytes, little-endian) and the data: a record's bytes for link type
    /// 189 (`mmapped` false) or 220 (true). `capturedLength` is written as it is.
    public func encoded(mmapped: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.headerLength(mmapped: mmapped) + data.count)
        Self.append(&out, id, 8)
        out += [event.rawValue, transferType.rawValue, endpoint, device]
        Self.append(&out, UInt64(bus), 2)
        out += [setupFlag, dataFlag]
        Self.append(&out, UInt64(bitPattern: timestampSeconds), 8)
        Self.append(&out, UInt64(UInt32(bitPattern: timestampMicroseconds)), 4)
        Self.append(&out, UInt64(UInt32(bitPattern: status)), 4)
        Self.append(&out, UInt64(length), 4)
        Self.append(&out, UInt64(capturedLength), 4)
        out += Self.eightBytes(setupBytes)
        if mmapped {
            Self.append(&out, UInt64(UInt32(bitPattern: interval)), 4)
            Self.append(&out, UInt64(UInt32(bitPattern: startFrame)), 4)
            Self.append(&out, UInt64(transferFlags), 4)
            Self.append(&out, UInt64(descriptorCount), 4)
        }
        return out + data
    }

    /// `bytes` cut or padded with zeros to 8.
    private static func eightBytes(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.prefix(8)) + [UInt8](repeating: 0, count: max(0, 8 - bytes.count))
    }

    /// The little-endian number of `count` bytes at `offset`; the caller checked the length.
    private static func little(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> UInt64 {
        (0..<count).reversed().reduce(0) { $0 << 8 | UInt64(bytes[offset + $1]) }
    }

    private static func append(_ out: inout [UInt8], _ value: UInt64, _ count: Int) {
        for i in 0..<count { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}
