import ANTProtocol
import Testing

/// Replies from the stick: capabilities of the two sticks in the notes, version, serial, channel
/// responses and events, received data in every extended format, and typed errors for every
/// payload that is too short.
@Suite struct ANTReplyTests {
    func reply(_ id: UInt8, _ payload: [UInt8]) throws(ANTProtocolError) -> ANTReply {
        try ANTReply(ANTMessage(id, payload))
    }

    @Test("USB2 stick capabilities 54 08 03 00 BA 36 00: 8 channels, 3 networks, extended messages and scan mode")
    func usb2Capabilities() throws {
        guard case .capabilities(let c) = try reply(0x54, [0x08, 0x03, 0x00, 0xBA, 0x36, 0x00]) else {
            Issue.record("not capabilities")
            return
        }
        #expect(c.maxChannels == 8 && c.maxNetworks == 3 && c.standardOptions == 0 && c.advancedOptions == 0xBA)
        #expect(c.advancedOptions2 == 0x36 && c.maxSensRcoreChannels == 0 && c.advancedOptions3 == nil && c.advancedOptions4 == nil)
        #expect(c.raw == [0x08, 0x03, 0x00, 0xBA, 0x36, 0x00])
        #expect(c.supportsReceiveChannels && c.supportsTransmitChannels && c.supportsAcknowledgedMessages && c.supportsBurstMessages)
        #expect(c.supportsReceiveMessages && c.supportsTransmitMessages)
        #expect(c.supportsNetworks && c.supportsSerialNumber && c.supportsPerChannelTransmitPower && c.supportsLowPrioritySearch)
        #expect(c.supportsSearchList && !c.supportsScript)
        #expect(c.supportsExtendedMessages && c.supportsRxScanMode && c.supportsProximitySearch && c.supportsExtendedAssign)
        #expect(!c.supportsLED && !c.supportsANTFS && !c.supportsFIT1)
        #expect(!c.supportsAdvancedBurst && !c.supportsEncryptedChannels)
    }

    @Test("USB-m capabilities [8,8,0,186,54,0,223] (antfs-cli#132): 8 networks and advanced options 3")
    func usbmCapabilities() throws {
        let c = try ANTCapabilities(payload: [8, 8, 0, 186, 54, 0, 223])
        #expect(c.maxChannels == 8 && c.maxNetworks == 8 && c.advancedOptions3 == 0xDF)
        #expect(c.supportsAdvancedBurst && c.supportsEventBuffering && c.supportsEventFiltering && c.supportsHighDutySearch)
        #expect(c.supportsSearchSharing && c.supportsSelectiveDataUpdates && c.supportsEncryptedChannels)
        #expect(c.supportsExtendedMessages && c.supportsRxScanMode)
        #expect(try reply(0x54, [8, 8, 0, 186, 54, 0, 223]) == .capabilities(c))
    }

    @Test("a stick that cannot burst or receive says so in its standard options")
    func standardOptions() throws {
        let c = try ANTCapabilities(payload: [4, 1, 0x3F, 0x00])
        #expect(!c.supportsReceiveChannels && !c.supportsTransmitChannels && !c.supportsReceiveMessages)
        #expect(!c.supportsTransmitMessages && !c.supportsAcknowledgedMessages && !c.supportsBurstMessages)
        #expect(!c.supportsExtendedMessages && c.advancedOptions2 == nil)
    }

    @Test("version, serial number, startup and serial error")
    func deviceReplies() throws {
        #expect(try reply(0x3E, Array("AP2USB1.05".utf8) + [0x00, 0x41]) == .version("AP2USB1.05"))
        #expect(try reply(0x3E, Array("AJK1.04RAF".utf8)) == .version("AJK1.04RAF"), "no NUL: the whole payload")
        #expect(try reply(0x3E, [0x41, 0xC3, 0x00]) == .version("A?"), "non-ASCII bytes become ?")
        #expect(try reply(0x61, [0x78, 0x56, 0x34, 0x12]) == .serialNumber(0x1234_5678))
        #expect(try reply(0x6F, [0x20]) == .startup(reason: 0x20))
        #expect(try reply(0xAE, [0x02, 0xA4]) == .serialError(0x02))
    }

    @Test("0x40 is a response to a command, or an event when its message ID byte is 1")
    func responsesAndEvents() throws {
        #expect(try reply(0x40, [0x00, 0x46, 0x00]) == .channelResponse(channel: 0, messageID: 0x46, code: .noError))
        #expect(try reply(0x40, [0x01, 0x4B, 0x15]) == .channelResponse(channel: 1, messageID: 0x4B, code: .channelInWrongState))
        #expect(try reply(0x40, [0x02, 0x01, 0x07]) == .channelEvent(channel: 2, code: .channelClosed))
        #expect(try reply(0x40, [0x00, 0x01, 0x02]) == .channelEvent(channel: 0, code: .rxFail))
        #expect(try reply(0x40, [0x00, 0x66, 0x28]) == .channelResponse(channel: 0, messageID: 0x66, code: .invalidMessage))
    }

    @Test("response codes map both ways, with readable names")
    func responseCodes() {
        for raw in 0...255 {
            #expect(ANTResponseCode(UInt8(raw)).rawValue == UInt8(raw))
        }
        let named: [(UInt8, ANTResponseCode)] = [
            (0, .noError), (1, .rxSearchTimeout), (2, .rxFail), (3, .tx), (4, .transferRxFailed), (5, .transferTxCompleted),
            (6, .transferTxFailed), (7, .channelClosed), (8, .rxFailGoToSearch), (9, .channelCollision), (10, .transferTxStart),
            (21, .channelInWrongState), (22, .channelNotOpened), (24, .channelIDNotSet), (25, .closeAllChannels),
            (31, .transferInProgress), (32, .transferSequenceNumberError), (33, .transferInError), (39, .messageSizeExceedsLimit),
            (40, .invalidMessage), (41, .invalidNetworkNumber), (48, .invalidListID), (49, .invalidScanTxChannel),
            (51, .invalidParameterProvided), (52, .serialQueueOverflow), (53, .queueOverflow), (56, .encryptNegotiationSuccess),
            (57, .encryptNegotiationFail), (64, .nvmFullError), (65, .nvmWriteError), (112, .usbStringWriteFail),
        ]
        for (raw, code) in named { #expect(ANTResponseCode(raw) == code) }
        #expect(ANTResponseCode(200) == .other(200))
        #expect(ANTResponseCode.channelClosed.description == "channel closed (7)")
        #expect(ANTResponseCode(200).description == "unknown code (200)")
        #expect(ANTResponseCode.transferTxFailed.isEvent && !ANTResponseCode.channelInWrongState.isEvent
            && !ANTResponseCode.noError.isEvent)
    }

    static let data: [UInt8] = [0x84, 0x00, 0x2E, 0x56, 0x59, 0x58, 0x2E, 0x6E]

    @Test("plain broadcast and acknowledged data")
    func plainData() throws {
        #expect(try reply(0x4E, [0x01] + Self.data) == .broadcast(ANTDataMessage(channel: 1, data: Self.data)))
        #expect(try reply(0x4F, [0x00] + Self.data) == .acknowledged(ANTDataMessage(channel: 0, data: Self.data)))
    }

    @Test("flagged extended broadcast: channel ID, RSSI and receive time stamp after flag 0xE0")
    func flaggedExtended() throws {
        let ext: [UInt8] = [0xE0, 0x39, 0x30, 0x78, 0x01, 0x20, 0xC4, 0xB0, 0x34, 0x12]
        let expected = ANTDataMessage(channel: 0, data: Self.data,
                                      channelID: ANTChannelID(deviceNumber: 12345, deviceType: 120, transmissionType: 1), rssi: -60,
                                      rssiThreshold: -80, rxTimestamp: 0x1234)
        #expect(try reply(0x4E, [0x00] + Self.data + ext) == .broadcast(expected))
        // Each field alone.
        let idOnly = try reply(0x4E, [0x00] + Self.data + [0x80, 0x39, 0x30, 0xF8, 0x05])
        #expect(idOnly == .broadcast(ANTDataMessage(channel: 0, data: Self.data,
                                                    channelID: ANTChannelID(deviceNumber: 12345, deviceType: 120, pairing: true,
                                                                            transmissionType: 5))))
        #expect(try reply(0x4F, [0x03] + Self.data + [0x40, 0x20, 0xD8, 0x9C])
            == .acknowledged(ANTDataMessage(channel: 3, data: Self.data, rssi: -40, rssiThreshold: -100)))
        #expect(try reply(0x4E, [0x00] + Self.data + [0x20, 0xFF, 0x7F]) == .broadcast(ANTDataMessage(channel: 0, data: Self.data,
            rxTimestamp: 0x7FFF)))
        #expect(try reply(0x4E, [0x00] + Self.data + [0x00]) == .broadcast(ANTDataMessage(channel: 0, data: Self.data)))
    }

    @Test("legacy extended 0x5D/0x5E/0x5F decode into the same types")
    func legacyExtended() throws {
        let id = ANTChannelID(deviceNumber: 0x0102, deviceType: 11, transmissionType: 0x05)
        #expect(try reply(0x5D, [0x02, 0x02, 0x01, 0x0B, 0x05] + Self.data) == .broadcast(ANTDataMessage(channel: 2, data: Self.data,
            channelID: id)))
        #expect(try reply(0x5E, [0x02, 0x02, 0x01, 0x0B, 0x05] + Self.data)
            == .acknowledged(ANTDataMessage(channel: 2, data: Self.data, channelID: id)))
        #expect(try reply(0x5F, [0xA2, 0x02, 0x01, 0x0B, 0x05] + Self.data)
            == .burst(ANTBurstPacket(channel: 2, sequence: 1, isLast: true, data: Self.data, channelID: id)))
    }

    @Test("burst packets: channel in bits 0-4, sequence in bits 5-6, last in bit 7")
    func burstPackets() throws {
        #expect(try reply(0x50, [0x00] + Self.data) == .burst(ANTBurstPacket(channel: 0, sequence: 0, isLast: false, data: Self.data)))
        #expect(try reply(0x50, [0x63] + Self.data) == .burst(ANTBurstPacket(channel: 3, sequence: 3, isLast: false, data: Self.data)))
        #expect(try reply(0x50, [0xA1] + Self.data + [0x80, 0x01, 0x00, 0x01, 0x05])
            == .burst(ANTBurstPacket(channel: 1, sequence: 1, isLast: true, data: Self.data,
                                     channelID: ANTChannelID(deviceNumber: 1, deviceType: 1, transmissionType: 5))))
    }

    @Test("channel ID and channel status replies")
    func channelReplies() throws {
        #expect(try reply(0x51, [0x01, 0x39, 0x30, 0x78, 0x01])
            == .channelID(channel: 1, ANTChannelID(deviceNumber: 12345, deviceType: 120, transmissionType: 1)))
        #expect(try reply(0x52, [0x00, 0x03]) == .channelStatus(channel: 0, state: 3))
        #expect(try reply(0x52, [0x01, 0x16]) == .channelStatus(channel: 1, state: 2), "network and type bits are masked off")
    }

    @Test("other message IDs are kept as they are")
    func others() throws {
        #expect(try reply(0x99, [1, 2]) == .other(ANTMessage(0x99, [1, 2])))
        #expect(try reply(0x72, []) == .other(ANTMessage(0x72, [])))
    }

    @Test("every payload too short for its ID is a typed error naming the ID and the bytes needed")
    func tooShort() {
        let minimum: [(UInt8, Int)] = [
            (0x6F, 1), (0x54, 4), (0x3E, 1), (0x61, 4), (0x40, 3), (0x4E, 9), (0x4F, 9), (0x50, 9), (0x5D, 13), (0x5E, 13), (0x5F, 13),
            (0x51, 5), (0x52, 2), (0xAE, 1),
        ]
        for (id, count) in minimum {
            for short in 0..<count {
                #expect(throws: ANTProtocolError.self) { try reply(id, [UInt8](repeating: 0, count: short)) }
            }
            do {
                _ = try reply(id, [UInt8](repeating: 0, count: count - 1))
                Issue.record("0x\(String(id, radix: 16)) accepted \(count - 1) bytes")
            } catch {
                guard case .tooShort(_, let needed, let available) = error.reason else { continue }
                #expect(error.messageID == id && needed == count && available == count - 1)
                #expect(error.description.contains("needs \(count) payload bytes, \(count - 1) received"))
            }
            #expect(throws: Never.self) { try reply(id, [UInt8](repeating: 0, count: count)) }
        }
    }

    @Test("flagged extended data shorter than its flag announces is a typed error")
    func truncatedExtension() {
        let cases: [([UInt8], Int)] = [([0x80, 1, 2, 3], 14), ([0xE0, 1, 2, 3, 4, 5, 6, 7, 8], 19), ([0x20, 1], 12), ([0x40, 0x20, 1], 13)]
        for (ext, needed) in cases {
            #expect(throws: ANTProtocolError(messageID: 0x4E, .tooShort(field: "extended data (flag 0x\(hex(ext[0])))", needed: needed,
                                                                         available: 9 + ext.count))) {
                try reply(0x4E, [0x00] + Self.data + ext)
            }
        }
    }

    func hex(_ b: UInt8) -> String { String(b, radix: 16, uppercase: true) }
}
