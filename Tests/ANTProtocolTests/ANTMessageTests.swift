import ANTProtocol
import Testing

/// Commands, channel IDs and the ANT+ channel parameters, byte for byte.
@Suite struct ANTMessageTests {
    @Test("configuration commands carry the bytes the notes list")
    func configurationCommands() {
        #expect(ANTCommand.assignChannel(0, type: .receive, network: 0) == ANTMessage(0x42, [0x00, 0x00, 0x00]))
        #expect(ANTCommand.assignChannel(2, type: .transmit, network: 1, extendedAssignment: 0x01) == ANTMessage(0x42, [0x02, 0x10, 0x01,
            0x01]))
        #expect(ANTCommand.setChannelPeriod(0, period: 8070) == ANTMessage(0x43, [0x00, 0x86, 0x1F]))
        #expect(ANTCommand.setSearchTimeout(1, 12) == ANTMessage(0x44, [0x01, 0x0C]))
        #expect(ANTCommand.setLowPrioritySearchTimeout(1, 2) == ANTMessage(0x63, [0x01, 0x02]))
        #expect(ANTCommand.setRFFrequency(0, 57) == ANTMessage(0x45, [0x00, 0x39]))
        // The ANT-FS search waveform `49 [ch, 53, 00]`.
        #expect(ANTCommand.setSearchWaveform(0, 53) == ANTMessage(0x49, [0x00, 0x35, 0x00]))
        #expect(ANTCommand.setChannelID(0, ANTChannelID(deviceNumber: 0x1234, deviceType: 120, pairing: true, transmissionType: 0x51))
            == ANTMessage(0x51, [0x00, 0x34, 0x12, 0xF8, 0x51]))
    }

    @Test("control and data commands")
    func controlCommands() {
        #expect(ANTCommand.reset() == ANTMessage(0x4A, [0x00]))
        #expect(ANTCommand.openChannel(3) == ANTMessage(0x4B, [0x03]))
        #expect(ANTCommand.closeChannel(3) == ANTMessage(0x4C, [0x03]))
        #expect(ANTCommand.unassignChannel(3) == ANTMessage(0x41, [0x03]))
        #expect(ANTCommand.openRxScanMode() == ANTMessage(0x5B, [0x00]))
        #expect(ANTCommand.requestMessage(channel: 0, ANTMessageID.capabilities) == ANTMessage(0x4D, [0x00, 0x54]))
        #expect(ANTCommand.enableExtendedMessages(true) == ANTMessage(0x66, [0x00, 0x01]))
        #expect(ANTCommand.enableExtendedMessages(false) == ANTMessage(0x66, [0x00, 0x00]))
        let flags = ANTCommand.LibConfigFlag.channelID | ANTCommand.LibConfigFlag.rssi | ANTCommand.LibConfigFlag.rxTimestamp
        #expect(ANTCommand.libConfig(flags) == ANTMessage(0x6E, [0x00, 0xE0]))
        #expect(ANTCommand.acknowledged(channel: 1, [0x46, 0xFF]) == ANTMessage(0x4F, [0x01, 0x46, 0xFF, 0, 0, 0, 0, 0, 0]))
    }

    @Test("a network key command carries the network and the 8 key bytes (a made-up key)")
    func networkKey() {
        let key: [UInt8] = [0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87]
        let message = ANTCommand.setNetworkKey(network: 1, key: key)
        #expect(message == ANTMessage(0x46, [0x01] + key))
        #expect(message.encoded.count == 13)
    }

    @Test("a burst splits into 8-byte packets with sequence 0, 1, 2, 3, 1, ... and the last flagged")
    func burstSplit() {
        let three = ANTCommand.burst(channel: 2, (1...20).map { UInt8($0) })
        #expect(three.map { $0.payload[0] } == [0x02, 0x22, 0xC2])
        #expect(three.allSatisfy { $0.id == 0x50 && $0.payload.count == 9 })
        #expect(Array(three[2].payload[1...]) == [17, 18, 19, 20, 0, 0, 0, 0])
        let eight = ANTCommand.burst(channel: 0, [UInt8](repeating: 7, count: 64))
        #expect(eight.map { $0.payload[0] >> 5 } == [0, 1, 2, 3, 1, 2, 3, 5])
        #expect(ANTCommand.burst(channel: 0x25, []) == [ANTMessage(0x50, [0x85, 0, 0, 0, 0, 0, 0, 0, 0])])
        #expect(ANTCommand.burst(channel: 1, [UInt8](repeating: 1, count: 8)).map { $0.payload[0] } == [0x81])
    }

    @Test("a channel ID round-trips through its 4 bytes; the 20-bit number takes the transmission type's high nibble")
    func channelID() throws {
        let id = ANTChannelID(deviceNumber: 0xBEEF, deviceType: 11, pairing: true, transmissionType: 0xA5)
        #expect(id.encoded == [0xEF, 0xBE, 0x8B, 0xA5])
        #expect(ANTChannelID(bytes: id.encoded) == id)
        #expect(ANTChannelID(bytes: [0, 0, 0]) == nil)
        #expect(ANTChannelID(bytes: [9, 9, 0xEF, 0xBE, 0x0B, 0x01], at: 2) == ANTChannelID(deviceNumber: 0xBEEF, deviceType: 11,
                                                                                           transmissionType: 1))
        #expect(id.extendedDeviceNumber == 0xA_BEEF)
        #expect(ANTChannelID(deviceNumber: 1, deviceType: 0xF8, transmissionType: 0).deviceType == 0x78)
        #expect(id.description == "device 48879 type 11 trans 165 pairing")
    }

    @Test("ANT+ channel parameters: device types, periods and keys of every sensor kind")
    func channelParameters() {
        let table: [(ANTPlusChannelParameters, UInt8, UInt16, String)] = [
            (.heartRate, 120, 8070, "heart_rate"), (.bikeSpeed, 123, 8118, "speed"), (.bikeCadence, 122, 8102, "cadence"),
            (.bikeSpeedCadence, 121, 8086, "speed_cadence"), (.bikePower, 11, 8182, "power"),
            (.fitnessEquipment, 17, 8192, "fitness_equipment"), (.strideSpeedDistance, 124, 8134, "stride"),
            (.weightScale, 119, 8192, "weight_scale"),
        ]
        for (parameters, type, period, key) in table {
            #expect(parameters.deviceType == type && parameters.period == period && parameters.key == key)
            #expect(ANTPlusChannelParameters.forDeviceType(type) == parameters)
            #expect(ANTPlusChannelParameters.forDeviceType(type | 0x80) == parameters, "the pairing bit is ignored")
            #expect(ANTPlusChannelParameters.forKey(key) == parameters)
        }
        #expect(ANTPlusChannelParameters.all.count == table.count)
        #expect(Set(ANTPlusChannelParameters.all.map(\.name)).count == table.count)
        #expect(ANTPlusChannelParameters.forDeviceType(1) == nil && ANTPlusChannelParameters.forKey("hrm") == nil)
        #expect(abs(ANTPlusChannelParameters.heartRate.messageRate - 4.06) < 0.01)
        #expect(ANTPlusChannelParameters.heartRate.description == "heart rate (type 120, period 8070)")
        #expect(ANTPlus.radioFrequency == 57 && ANTPlus.networkKeyLength == 8)
    }

    @Test("the commands that open a sensor channel: assign, ID, period, timeout, RF 57, open")
    func openCommands() {
        let commands = ANTPlusChannelParameters.bikePower.openCommands(channel: 1, network: 0, deviceNumber: 0x0102, searchTimeout: 255)
        #expect(commands == [
            ANTMessage(0x42, [1, 0x00, 0]), ANTMessage(0x51, [1, 0x02, 0x01, 11, 0]), ANTMessage(0x43, [1, 0xF6, 0x1F]),
            ANTMessage(0x44, [1, 255]), ANTMessage(0x45, [1, 57]), ANTMessage(0x4B, [1]),
        ])
    }

    @Test("a network key is read from hexadecimal text in the usual spellings, and rejected otherwise")
    func parseNetworkKey() {
        let key: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]
        #expect(ANTPlus.parseNetworkKey("0123456789ABCDEF") == key)
        #expect(ANTPlus.parseNetworkKey(" 01 23 45 67 89 ab cd ef\n") == key)
        #expect(ANTPlus.parseNetworkKey("01:23:45:67:89:AB:CD:EF") == key)
        #expect(ANTPlus.parseNetworkKey("0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF") == key)
        #expect(ANTPlus.parseNetworkKey("0x0123456789abcdef") == key)
        #expect(ANTPlus.parseNetworkKey("0123456789ABCDE") == nil, "15 digits")
        #expect(ANTPlus.parseNetworkKey("0123456789ABCDEF00") == nil, "9 bytes")
        #expect(ANTPlus.parseNetworkKey("0123456789ABCDEG") == nil)
        #expect(ANTPlus.parseNetworkKey("012 3456789ABCDEF") == nil, "a byte split by a separator")
        #expect(ANTPlus.parseNetworkKey("") == nil)
    }

    @Test("message IDs are distinct")
    func messageIDs() {
        let ids: [UInt8] = [
            ANTMessageID.channelResponse, ANTMessageID.version, ANTMessageID.channelStatus, ANTMessageID.capabilities,
            ANTMessageID.serialNumber, ANTMessageID.startup, ANTMessageID.serialError, ANTMessageID.unassignChannel,
            ANTMessageID.assignChannel, ANTMessageID.channelPeriod, ANTMessageID.searchTimeout, ANTMessageID.radioFrequency,
            ANTMessageID.networkKey, ANTMessageID.transmitPower, ANTMessageID.searchWaveform, ANTMessageID.channelID,
            ANTMessageID.addChannelIDToList, ANTMessageID.configureIDList, ANTMessageID.channelTransmitPower,
            ANTMessageID.lowPrioritySearchTimeout, ANTMessageID.enableExtendedReceive, ANTMessageID.enableLED, ANTMessageID.libConfig,
            ANTMessageID.frequencyAgility, ANTMessageID.proximitySearch, ANTMessageID.resetSystem, ANTMessageID.openChannel,
            ANTMessageID.closeChannel, ANTMessageID.requestMessage, ANTMessageID.openRxScanMode, ANTMessageID.broadcastData,
            ANTMessageID.acknowledgedData, ANTMessageID.burstData, ANTMessageID.extendedBroadcastData,
            ANTMessageID.extendedAcknowledgedData, ANTMessageID.extendedBurstData, ANTMessageID.advancedBurstData,
        ]
        #expect(Set(ids).count == ids.count)
        #expect(ANTMessageID.broadcastData == 0x4E && ANTMessageID.acknowledgedData == 0x4F && ANTMessageID.burstData == 0x50)
        #expect(ANTMessageID.advancedBurstData == 0x72 && ANTMessageID.libConfig == 0x6E && ANTMessageID.enableExtendedReceive == 0x66)
        #expect(ANTMessageID.openRxScanMode == 0x5B && ANTMessageID.lowPrioritySearchTimeout == 0x63 && ANTMessageID.searchWaveform == 0x49)
    }
}
