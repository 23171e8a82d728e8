import NIOCore
import NIOEmbedded
import Testing
import TestSupport
@testable import ExecDriver

/// The exec driver's line decoder (NIO's line decoder with a cap) against a plain reading of
/// the same bytes, whatever the chunks they arrive in: lines end at a newline (a CR before it
/// dropped); a line over the limit is handed on cut to the limit and flagged, its rest dropped;
/// the last line may lack its newline.
@Suite struct ExecLineDecoderTests {
    /// What the decoder should hand on for `bytes`, read in one piece.
    static func expected(_ bytes: [UInt8], limit: Int) -> [ExecLine] {
        var lines: [ExecLine] = []
        var parts = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        let endsWithNewline = bytes.last == 0x0A
        if endsWithNewline || bytes.isEmpty { parts.removeLast() }
        for (i, var part) in parts.enumerated() {
            let complete = i < parts.count - 1 || endsWithNewline
            // The decoder hands on a too-long line as soon as it has more than `limit` bytes, so
            // a line is long when it holds more than `limit` bytes before its newline.
            if part.count > limit {
                lines.append(ExecLine(text: String(decoding: part.prefix(limit), as: UTF8.self), tooLong: true))
                continue
            }
            if complete, part.last == 0x0D { part.removeLast() }
            lines.append(ExecLine(text: String(decoding: part, as: UTF8.self), tooLong: false))
        }
        return lines
    }

    static func decoded(_ chunks: [[UInt8]], limit: Int) throws -> [ExecLine] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(ExecLineDecoder(limit: limit)))
        for chunk in chunks { try channel.writeInbound(ByteBuffer(bytes: chunk)) }
        _ = try channel.finish(acceptAlreadyClosed: true)
        var lines: [ExecLine] = []
        while let line = try channel.readInbound(as: ExecLine.self) { lines.append(line) }
        return lines
    }

    @Test func chunkedAnyWayItReadsTheSame() throws {
        var random = SeededGenerator(seed: 7)
        let alphabet: [UInt8] = Array("ab{}\"".utf8) + [0x0A, 0x0A, 0x0D]
        for round in 0..<400 {
            let limit = [4, 8, 16, 64][round % 4]
            let bytes = (0..<Int.random(in: 0...200, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            var chunks: [[UInt8]] = []
            var rest = bytes[...]
            while !rest.isEmpty {
                let n = Int.random(in: 1...max(1, min(rest.count, limit * 3)), using: &random)
                chunks.append(Array(rest.prefix(n)))
                rest = rest.dropFirst(n)
            }
            let got = try Self.decoded(chunks, limit: limit)
            let want = Self.expected(bytes, limit: limit)
            #expect(got.map(\.text) == want.map(\.text) && got.map(\.tooLong) == want.map(\.tooLong),
                    "round \(round), limit \(limit), chunks \(chunks.map { String(decoding: $0, as: UTF8.self) })")
        }
    }

    @Test func aLongLineIsCutOnceAndTheNextReadWhole() throws {
        let long = [UInt8](repeating: 0x78, count: 100)
        let lines = try Self.decoded([Array(long.prefix(30)), Array(long.dropFirst(30)) + Array("\nok\r\nlast".utf8)], limit: 16)
        #expect(lines.map(\.text) == [String(repeating: "x", count: 16), "ok", "last"])
        #expect(lines.map(\.tooLong) == [true, false, false])
    }
}

extension ExecLine: Equatable {
    static func == (a: ExecLine, b: ExecLine) -> Bool { a.text == b.text && a.tooLong == b.tooLong }
}
