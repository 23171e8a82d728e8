/// CRC-16/ARC (reflected polynomial 0xA001, no final XOR), as ANT-FS checks its download and
/// upload blocks. The caller gives the initial value: ANT-FS chains the CRC from block to block,
/// so each block's CRC continues from the previous block's (the seed sent in the request), and a
/// whole file's CRC starts from 0. Check value: the CRC of ASCII "123456789" from 0 is 0xBB3D.
public enum CRC16ARC {
    /// The CRC of `bytes`, continuing from `crc`.
    public static func update(_ crc: UInt16, _ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc = crc
        for byte in bytes {
            crc = (crc >> 8) ^ table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)]
        }
        return crc
    }

    /// The CRC of `bytes` from 0.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 { update(0, bytes) }

    /// The CRC of each byte value from 0, bit by bit: the table the update step indexes.
    private static let table: [UInt16] = (0...255).map { (value: Int) -> UInt16 in
        var crc = UInt16(value)
        for _ in 0..<8 {
            crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1
        }
        return crc
    }
}
