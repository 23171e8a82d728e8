#!/usr/bin/env python3
"""Writes the zip fixtures of Tests/ZipStreamTests (Fixtures/zip/*.zip) with Python's zipfile and,
where zipfile will not write a case (Zip64 records in a small file, an encrypted flag, a lying
size), by patching or writing the records by hand (PKWARE APPNOTE 6.3). Deterministic: fixed
dates, so the files only change when this script does.

    python3 Fixtures/zip/make-zips.py
"""
import io
import struct
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATE = (2024, 5, 17, 8, 30, 0)
TEXT = b"".join(b"line %05d: the quick brown fox jumps over the lazy dog\n" % i for i in range(2000))


def archive(entries, compression=zipfile.ZIP_DEFLATED):
    """A zip of (name, bytes) in order, every entry dated DATE."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, DATE)
            info.compress_type = compression
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    return bytearray(out.getvalue())


def central(data, index=0):
    """Offset of the index-th central directory header."""
    at = -1
    for _ in range(index + 1):
        at = data.index(b"PK\x01\x02", at + 1)
    return at


def zip64(entries):
    """A zip whose every record is in its Zip64 form (sizes and offsets 0xFFFFFFFF with the
    64-bit values in the extra field, a Zip64 end record and locator), deflated."""
    out = bytearray()
    directory = bytearray()
    for name, data in entries:
        name = name.encode()
        packed = zlib.compressobj(6, zlib.DEFLATED, -15)
        body = packed.compress(data) + packed.flush()
        crc = zlib.crc32(data)
        offset = len(out)
        local_extra = struct.pack("<HHQQ", 1, 16, len(data), len(body))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 8, 0x4300, 0x58B1, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                           len(name), len(local_extra)) + name + local_extra + body
        extra = struct.pack("<HHQQQ", 1, 24, len(data), len(body), offset)
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0x4300, 0x58B1, crc, 0xFFFFFFFF,
                                 0xFFFFFFFF, len(name), len(extra), 0, 0, 0, 0o644 << 16, 0xFFFFFFFF) + name + extra
    start = len(out)
    out += directory
    end64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(entries), len(entries), len(directory), start)
    out += struct.pack("<IIQI", 0x07064B50, 0, end64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return out


def write(name, data):
    (HERE / name).write_bytes(bytes(data))


def main():
    # Good archives.
    write("deflate.zip", archive([("folder/", b""), ("folder/text.txt", TEXT), ("empty.txt", b"")]))
    write("stored.zip", archive([("a.txt", b"hello, stored world\n"), ("b/c.txt", TEXT[:1000])], zipfile.ZIP_STORED))
    write("zip64.zip", zip64([("apple_health_export/export.xml", TEXT), ("second.txt", b"second entry\n")]))
    commented = archive([("a.txt", b"comment follows\n")])
    struct.pack_into("<H", commented, len(commented) - 2, 9)
    write("comment.zip", commented + b"a comment")

    # Hostile or damaged ones.
    # 20 MiB of zeros: about a thousand times smaller deflated (a zip bomb by ratio).
    write("bomb-ratio.zip", archive([("zeros.bin", bytes(20 << 20))]))
    # A directory that understates the inflated size (100 bytes for 112 000).
    liar = archive([("liar.txt", TEXT)])
    struct.pack_into("<I", liar, central(liar) + 24, 100)
    write("bomb-declared-size.zip", liar)
    write("traversal.zip", archive([("../evil.txt", b"outside\n"), ("/etc/passwd", b"root\n"),
                                    ("ok/../../up.txt", b"up\n"), ("good.txt", b"fine\n")]))
    whole = archive([("text.txt", TEXT)])
    write("truncated-tail.zip", whole[: len(whole) - 30])
    # Cut inside the entry's data, directory kept: the directory points past the data's end.
    cut = archive([("text.txt", TEXT)])
    data_start = 30 + len("text.txt")
    directory = cut[central(cut):]
    short = cut[: data_start + 100]
    struct.pack_into("<I", directory, len(directory) - 6, len(short))  # central directory offset
    write("truncated-data.zip", short + directory)
    crc = archive([("a.txt", b"hello, stored world\n")], zipfile.ZIP_STORED)
    crc[30 + len("a.txt")] ^= 0x20  # 'h' -> 'H' in the data, CRC unchanged
    write("crc-mismatch.zip", crc)
    encrypted = archive([("secret.txt", b"not really secret\n")], zipfile.ZIP_STORED)
    struct.pack_into("<H", encrypted, 6, 1)
    struct.pack_into("<H", encrypted, central(encrypted) + 8, 1)
    write("encrypted.zip", encrypted)
    write("lzma.zip", archive([("text.txt", TEXT[:2000])], zipfile.ZIP_LZMA))
    damaged = archive([("text.txt", TEXT)])
    for i in range(40, 60):
        damaged[data_start + i] = 0xFF
    write("deflate-damaged.zip", damaged)
    write("not-a-zip.zip", b"this is plain text, not a zip archive\n" * 3)


if __name__ == "__main__":
    main()
