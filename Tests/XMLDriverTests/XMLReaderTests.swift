import TestSupport
import Foundation
import Testing
@testable import XMLStream

/// Every event of `xml`, read whole.
func events(_ xml: String, skipWhitespace: Bool = true, limits: XMLLimits = XMLLimits()) throws -> [XMLEvent] {
    let reader = XMLReader(bytes: Array(xml.utf8), limits: limits, skipsWhitespaceText: skipWhitespace)
    var out: [XMLEvent] = []
    while let event = try reader.next() { out.append(event) }
    return out
}

/// The error reading `xml` fails with, nil if it reads.
func readError(_ xml: some Collection<UInt8>, limits: XMLLimits = XMLLimits()) -> XMLError? {
    let reader = XMLReader(bytes: xml, limits: limits)
    do {
        while try reader.next() != nil {}
        return nil
    } catch {
        return error
    }
}

func readError(_ xml: String, limits: XMLLimits = XMLLimits()) -> XMLError? { readError(Array(xml.utf8), limits: limits) }

func name(_ local: String, _ prefix: String = "") -> XMLName { XMLName(prefix: prefix, local: local) }

@Suite("XMLStream: events")
struct XMLReaderEventTests {
    @Test func elementsAttributesAndText() throws {
        let got = try events(#"<a x="1" y='two'><b/>hi<c k="v"></c></a>"#)
        #expect(got == [
            .startElement(name("a"), attributes: [XMLAttribute(name: name("x"), value: "1"),
                                                  XMLAttribute(name: name("y"), value: "two")]),
            .startElement(name("b"), attributes: []), .endElement(name("b")),
            .text("hi"),
            .startElement(name("c"), attributes: [XMLAttribute(name: name("k"), value: "v")]), .endElement(name("c")),
            .endElement(name("a")),
        ])
    }

    @Test func namespacePrefixesAreSplit() throws {
        let got = try events(#"<gpx xmlns:ns3="urn:x"><ns3:hr>78</ns3:hr></gpx>"#)
        #expect(got[0] == .startElement(name("gpx"), attributes: [XMLAttribute(name: name("ns3", "xmlns"), value: "urn:x")]))
        #expect(got[1] == .startElement(name("hr", "ns3"), attributes: []))
        #expect(got[3] == .endElement(name("hr", "ns3")))
        #expect(name("hr", "ns3").description == "ns3:hr")
        #expect([XMLAttribute(name: name("lat", "p"), value: "1")].value(of: "lat") == "1")
    }

    @Test func predefinedEntitiesAndCharacterReferences() throws {
        let got = try events(#"<a t="&lt;&amp;&quot;&#65;">&lt;&gt;&amp;&apos;&quot; &#65;&#x42;&#x1F600;&#233;</a>"#)
        #expect(got[0] == .startElement(name("a"), attributes: [XMLAttribute(name: name("t"), value: "<&\"A")]))
        #expect(got[1] == .text("<>&'\" AB😀é"))
    }

    @Test func cdataIsTextVerbatim() throws {
        let got = try events("<a>x<![CDATA[<b>&amp; ]] >]]>y</a>")
        #expect(got == [.startElement(name("a"), attributes: []), .text("x"), .text("<b>&amp; ]] >"), .text("y"),
                        .endElement(name("a"))])
    }

    @Test func declarationCommentsPIsAndDoctypeAreSkipped() throws {
        let xml = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- a comment with <tags> & ampersands -->
            <?xml-stylesheet href="s.xsl"?>
            <!DOCTYPE r SYSTEM "r.dtd" [ <!ELEMENT r ANY> <!-- ] > --> <!ATTLIST r a CDATA "]>"> ]>
            <r><!-- inside --><?pi data?>t</r>
            <!-- after -->
            """
        #expect(try events(xml) == [.startElement(name("r"), attributes: []), .text("t"), .endElement(name("r"))])
    }

    @Test func whitespaceTextIsReportedUnlessSkipped() throws {
        #expect(try events("<a> <b/>\n</a>", skipWhitespace: false) == [
            .startElement(name("a"), attributes: []), .text(" "), .startElement(name("b"), attributes: []),
            .endElement(name("b")), .text("\n"), .endElement(name("a")),
        ])
        #expect(try events("<a> <b/>\n</a>").count == 4)
    }

    @Test func lineEndsAndAttributeWhitespaceAreNormalized() throws {
        let got = try events("<a v=\"x\ty\r\nz\">1\r\n2\r3</a>")
        #expect(got[0] == .startElement(name("a"), attributes: [XMLAttribute(name: name("v"), value: "x y z")]))
        #expect(got[1] == .text("1\n2\n3"))
    }

    @Test func everyEventHasItsLineAndColumn() throws {
        let xml = "<?xml version=\"1.0\"?>\n<root>\n  <é a=\"1\">text</é>\n\t<b/>\n</root>"
        let reader = XMLReader(bytes: Array(xml.utf8), skipsWhitespaceText: true)
        var seen: [String] = []
        while let event = try reader.next() {
            let where_ = "\(reader.location.line):\(reader.location.column)"
            switch event {
            case .startElement(let n, _): seen.append("<\(n)>@\(where_)")
            case .endElement(let n): seen.append("</\(n)>@\(where_)")
            case .text(let t): seen.append("'\(t)'@\(where_)")
            }
        }
        // Columns count scalars: the `é` is one column, the tab is one column.
        #expect(seen == ["<root>@2:1", "<é>@3:3", "'text'@3:12", "</é>@3:16", "<b>@4:2", "</b>@4:2", "</root>@5:1"])
    }

    @Test func chunkedInputGivesTheSameEventsAndLocations() throws {
        let bytes = try fixtureBytes("tcx/garmin-vivoactivehr-sup.tcx")
        func collect(_ reader: XMLReader, feed: (XMLReader) -> Bool) throws -> [String] {
            var out: [String] = []
            while true {
                switch try reader.read() {
                case .event(let e): out.append("\(e)@\(reader.location)")
                case .needsInput: if !feed(reader) { reader.finishInput() }
                case .endOfDocument: return out
                }
            }
        }
        let whole = try collect(XMLReader(bytes: bytes)) { _ in false }
        var rng = SeededGenerator(seed: 7)
        var offset = 0
        let chunked = try collect(XMLReader()) { reader in
            guard offset < bytes.count else { return false }
            let n = min(bytes.count - offset, Int.random(in: 1...200, using: &rng))
            reader.append(bytes[offset..<offset + n])
            offset += n
            return true
        }
        #expect(whole.count > 3000)
        #expect(chunked == whole)
    }
}

@Suite("XMLStream: well-formedness errors")
struct XMLReaderErrorTests {
    /// (input, expected line, column, a phrase of the reason)
    static let cases: [(String, Int, Int, String)] = [
        ("<a>\n  <b></a>", 2, 6, "mismatched end tag: expected </b> for <b> opened at line 2, column 3, found </a>"),
        ("<a>\n<b>text", 2, 8, "<b> opened at line 2, column 1 is not closed"),
        ("<a></a></b>", 1, 8, "end tag </b> without a matching start tag"),
        ("<a x=1/>", 1, 6, "must be quoted"),
        ("<a x/>", 1, 5, "needs '='"),
        ("<a x='1'y='2'/>", 1, 9, "expected white space"),
        ("<a x='1' x='2'/>", 1, 10, "duplicate attribute 'x'"),
        ("<a x='<'/>", 1, 7, "'<' is not allowed in an attribute value"),
        ("<a x='1", 1, 8, "unexpected end of input"),
        ("<a/>\ntrailing", 2, 1, "text after the root element"),
        ("<a/><b/>", 1, 5, "a second root element <b>"),
        ("junk<a/>", 1, 1, "text before the root element"),
        ("<a>\u{1}</a>", 1, 4, "control character U+0001"),
        ("<a>x ]]> y</a>", 1, 6, "']]>' is not allowed"),
        ("<a>AT&T</a>", 1, 6, "'&' must start an entity or character reference"),
        ("<a>&#0;</a>", 1, 4, "not an XML character"),
        ("<a>&#xD800;</a>", 1, 4, "not an XML character"),
        ("<a>&#12a;</a>", 1, 4, "malformed character reference"),
        ("<a:b:c/>", 1, 2, "not a valid qualified name"),
        ("<1a/>", 1, 2, "expected a name"),
        ("<a><!DOCTYPE a></a>", 1, 4, "DOCTYPE declaration is only allowed before the root element"),
        ("<a><!-- x -- y --></a>", 1, 11, "'--' is not allowed inside a comment"),
        ("<a/><?xml version='1.0'?>", 1, 5, "only allowed at the very start"),
        ("<?xml version='1.0' encoding='ISO-8859-1'?><a/>", 1, 31, "unsupported encoding 'ISO-8859-1'"),
        ("<a><!-- never closed", 1, 21, "unexpected end of input in a comment started at line 1, column 4"),
        ("", 1, 1, "empty input"),
        ("   \n", 2, 1, "no root element"),
    ]

    @Test(arguments: cases.indices)
    func malformedInputFailsWithLineAndColumn(_ index: Int) {
        let (xml, line, column, phrase) = Self.cases[index]
        let error = readError(xml)
        #expect(error != nil, "accepted: \(xml)")
        #expect(error?.line == line && error?.column == column, "\(xml): \(String(describing: error))")
        #expect(error?.reason.contains(phrase) == true, "\(xml): \(String(describing: error))")
    }

    @Test func invalidUTF8InANameOrTextIsAnError() {
        let name = readError([0x3C, 0x61, 0xC3, 0x28, 0x2F, 0x3E] as [UInt8])  // <a\xC3(/>
        #expect(name?.kind == .invalidUTF8)
        #expect(name?.line == 1 && name?.column == 3)
        let text = readError(Array("<a>ok ".utf8) + [0xFF] + Array("</a>".utf8))
        #expect(text?.kind == .invalidUTF8 && text?.column == 7)
        let overlong = readError(Array("<a>".utf8) + [0xC0, 0xAF] + Array("</a>".utf8))
        #expect(overlong?.kind == .invalidUTF8)
    }

    @Test func otherEncodingsAreRefused() {
        #expect(readError([0xFF, 0xFE, 0x3C, 0x00] as [UInt8])?.kind == .unsupportedEncoding)
        #expect(readError([0x00, 0x3C, 0x00, 0x61] as [UInt8])?.kind == .unsupportedEncoding)
        #expect(readError("<?xml version='1.0' encoding='UTF-16'?><a/>")?.kind == .unsupportedEncoding)
        #expect(readError("<?xml version='1.0' encoding='us-ascii'?><a/>") == nil)
    }
}

@Suite("XMLStream: limits")
struct XMLReaderLimitTests {
    @Test func depth() {
        let limits = XMLLimits(maxDepth: 4)
        #expect(readError("<a><b><c><d/></c></b></a>", limits: limits) == nil)
        let error = readError("<a><b><c><d><e/></d></c></b></a>", limits: limits)
        #expect(error?.kind == .limitExceeded && error?.column == 13)
        #expect(error?.reason.contains("nested deeper than 4") == true)
        // The default (256) stops a deeply nested bomb early.
        let deep = String(repeating: "<a>", count: 100_000)
        #expect(readError(deep)?.kind == .limitExceeded)
    }

    @Test func nameLength() {
        let limits = XMLLimits(maxNameBytes: 8)
        #expect(readError("<abcdefgh/>", limits: limits) == nil)
        #expect(readError("<abcdefghi/>", limits: limits)?.kind == .limitExceeded)
        #expect(readError("<a abcdefghi='1'/>", limits: limits)?.kind == .limitExceeded)
    }

    @Test func attributeCountAndValueSize() {
        let limits = XMLLimits(maxAttributes: 3, maxAttributeValueBytes: 10)
        #expect(readError("<a b='1' c='2' d='3'/>", limits: limits) == nil)
        let many = readError("<a b='1' c='2' d='3' e='4'/>", limits: limits)
        #expect(many?.kind == .limitExceeded && many?.column == 22)
        #expect(readError("<a b='0123456789'/>", limits: limits) == nil)
        #expect(readError("<a b='0123456789X'/>", limits: limits)?.kind == .limitExceeded)
    }

    @Test func textSize() {
        let limits = XMLLimits(maxTextBytes: 16)
        #expect(readError("<a>0123456789abcdef</a>", limits: limits) == nil)
        #expect(readError("<a>0123456789abcdefX</a>", limits: limits)?.kind == .limitExceeded)
        #expect(readError("<a><![CDATA[0123456789abcdefX]]></a>", limits: limits)?.kind == .limitExceeded)
    }
}

@Suite("XMLStream: hostile input")
struct XMLReaderSecurityTests {
    /// The classic "billion laughs": ten entities each expanding to ten of the previous one.
    static let billionLaughs = """
        <?xml version="1.0"?>
        <!DOCTYPE lolz [
         <!ENTITY lol "lol">
         <!ELEMENT lolz (#PCDATA)>
         <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
         <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
         <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
         <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
         <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
         <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
         <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
         <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
         <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
        ]>
        <lolz>&lol9;</lolz>
        """

    @Test func billionLaughsFailsFastWithoutExpanding() {
        // CPU time of this thread, not wall-clock time (the machine may be busy with other tests).
        func threadCPUSeconds() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
        var error: XMLError?
        let before = threadCPUSeconds()
        error = readError(Self.billionLaughs)
        let cpu = threadCPUSeconds() - before
        #expect(error?.kind == .entityExpansionDisabled)
        #expect(error?.line == 15 && error?.column == 7)
        #expect(error?.description == "line 15, column 7: reference to entity '&lol9;': entity expansion is disabled (only &lt; &gt; &amp; &apos; &quot; and character references are read; DOCTYPE declarations are never interpreted)")
        // Expanding would take 10^9 entity copies; stopping at the first reference takes almost nothing.
        #expect(cpu < 5, "\(cpu) s of CPU")
    }

    @Test func externalEntityIsNeverResolved() throws {
        // A file with a marker: if the reader ever opened it, the marker would show somewhere.
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("healthgate-xxe-\(UInt32.random(in: 0...UInt32.max)).txt")
        try "TOP-SECRET-MARKER".write(to: secret, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secret) }
        func attack(_ target: String) -> String {
            """
            <?xml version="1.0"?>
            <!DOCTYPE foo [ <!ENTITY xxe SYSTEM "\(target)"> <!ENTITY % remote SYSTEM "\(target)"> %remote; ]>
            <foo>before &xxe; after</foo>
            """
        }
        let existing = readError(attack(secret.absoluteString))
        let missing = readError(attack("file:///nonexistent/healthgate"))
        let passwd = readError(attack("file:///etc/passwd"))
        #expect(passwd?.kind == .entityExpansionDisabled)
        #expect(passwd?.line == 3 && passwd?.column == 13)
        #expect(passwd?.reason.contains("reference to entity '&xxe;': entity expansion is disabled") == true)
        #expect(!(existing?.description.contains("TOP-SECRET") ?? true))
        // Whether the target exists or not changes nothing: it is never opened.
        #expect(existing?.location == missing?.location && existing?.kind == missing?.kind)
        // Events before the reference carry nothing from the file either.
        let reader = XMLReader(bytes: Array(attack(secret.absoluteString).utf8))
        var texts: [String] = []
        do {
            while let event = try reader.next() { if case .text(let t) = event { texts.append(t) } }
        } catch {}
        #expect(texts.allSatisfy { !$0.contains("TOP-SECRET") })
    }
}

/// Fixtures/<relative>, found from this source file.
func fixtureURL(_ relative: String) -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(relative)
}

func fixtureBytes(_ relative: String) throws -> [UInt8] { Array(try Data(contentsOf: fixtureURL(relative))) }
