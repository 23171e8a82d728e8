import FuzzSupport
import PacketCapture

/// Capture files: the input is a pcap or pcapng file. Every record is read (`CaptureReader`) until
/// the end or the first damage; for the usbmon link types (189 and 220) every record's USB header
/// is parsed (`USBMonPacket`), and a parsed header encodes back to the record's bytes it was read
/// from. The reader moves at least 12 bytes a record, so more records than that is a loop.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let bytes = input.rest
    guard var reader = try? CaptureReader(bytes) else { return 0 }
    var records = 0
    while let record = try? reader.next() {
        records += 1
        if records > bytes.count / 12 + 1 { fatalError("\(records) records from \(bytes.count) bytes: the reader does not advance") }
        let mmapped: Bool
        switch record.link {
        case .usbLinux: mmapped = false
        case .usbLinuxMMapped: mmapped = true
        default: continue
        }
        guard let packet = try? USBMonPacket(record) else { continue }
        let header = USBMonPacket.headerLength(mmapped: mmapped)
        if packet.encoded(mmapped: mmapped) != Array(record.data.prefix(header + packet.data.count)) {
            fatalError("usbmon header does not encode back to its bytes")
        }
    }
    return 0
}
