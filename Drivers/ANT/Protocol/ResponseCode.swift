/// The code of a 0x40 channel response or event (`[channel, message ID or 1, code]`).
///
/// Codes 1-10 are channel events (the message ID byte is 1); the others answer a command. Values
/// from the ANT message protocol (openant `Message.Code`).
public enum ANTResponseCode: Hashable, Sendable, CustomStringConvertible {
    case noError
    /// The search found no device before the search timeout; the channel closes.
    case rxSearchTimeout
    /// A message was expected in this period and not received.
    case rxFail
    /// A broadcast was sent (master channels).
    case tx
    /// A burst receive failed.
    case transferRxFailed
    /// An acknowledged or burst transfer reached the other side.
    case transferTxCompleted
    /// An acknowledged or burst transfer was not acknowledged.
    case transferTxFailed
    case channelClosed
    /// Too many messages were missed: the channel went back to searching.
    case rxFailGoToSearch
    case channelCollision
    case transferTxStart
    case channelInWrongState
    case channelNotOpened
    case channelIDNotSet
    case closeAllChannels
    case transferInProgress
    case transferSequenceNumberError
    case transferInError
    case messageSizeExceedsLimit
    case invalidMessage
    case invalidNetworkNumber
    case invalidListID
    case invalidScanTxChannel
    case invalidParameterProvided
    /// The stick's serial output queue overflowed (the host read too slowly).
    case serialQueueOverflow
    /// The stick's event queue overflowed: events were lost.
    case queueOverflow
    case encryptNegotiationSuccess
    case encryptNegotiationFail
    case nvmFullError
    case nvmWriteError
    case usbStringWriteFail
    case other(UInt8)

    private static let table: [(UInt8, ANTResponseCode, String)] = [
        (0, .noError, "no error"),
        (1, .rxSearchTimeout, "search timed out"),
        (2, .rxFail, "receive failed"),
        (3, .tx, "transmitted"),
        (4, .transferRxFailed, "transfer receive failed"),
        (5, .transferTxCompleted, "transfer completed"),
        (6, .transferTxFailed, "transfer failed"),
        (7, .channelClosed, "channel closed"),
        (8, .rxFailGoToSearch, "receive failed, searching again"),
        (9, .channelCollision, "channel collision"),
        (10, .transferTxStart, "transfer started"),
        (21, .channelInWrongState, "channel in wrong state"),
        (22, .channelNotOpened, "channel not opened"),
        (24, .channelIDNotSet, "channel ID not set"),
        (25, .closeAllChannels, "close all channels"),
        (31, .transferInProgress, "transfer in progress"),
        (32, .transferSequenceNumberError, "transfer sequence number error"),
        (33, .transferInError, "transfer in error"),
        (39, .messageSizeExceedsLimit, "message size exceeds limit"),
        (40, .invalidMessage, "invalid message"),
        (41, .invalidNetworkNumber, "invalid network number"),
        (48, .invalidListID, "invalid list ID"),
        (49, .invalidScanTxChannel, "invalid scan transmit channel"),
        (51, .invalidParameterProvided, "invalid parameter"),
        (52, .serialQueueOverflow, "serial queue overflow"),
        (53, .queueOverflow, "event queue overflow"),
        (56, .encryptNegotiationSuccess, "encryption negotiated"),
        (57, .encryptNegotiationFail, "encryption negotiation failed"),
        (64, .nvmFullError, "non-volatile memory full"),
        (65, .nvmWriteError, "non-volatile memory write error"),
        (112, .usbStringWriteFail, "USB string write failed"),
    ]

    public init(_ rawValue: UInt8) {
        self = Self.table.first { $0.0 == rawValue }?.1 ?? .other(rawValue)
    }

    public var rawValue: UInt8 {
        if case .other(let value) = self { return value }
        return Self.table.first { $0.1 == self }?.0 ?? 0
    }

    /// Codes 1-10, sent as channel events (message ID byte 1) rather than as answers.
    public var isEvent: Bool { (1...10).contains(rawValue) }

    /// `channel closed (7)`.
    public var description: String {
        let name = Self.table.first { $0.0 == rawValue }?.2 ?? "unknown code"
        return "\(name) (\(rawValue))"
    }
}
