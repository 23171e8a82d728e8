import Foundation
import LinuxAdapters
import HealthStore
public import Logging
import NIOCore
import NIOPosix
public import ServiceLifecycle
import Timing

/// The local status API: a Unix socket that answers every connection with the daemon's
/// ``DaemonState/Snapshot`` as one line of JSON and closes it (`healthgate status` reads it).
/// The socket is readable and writable by the daemon's user and group only.
public final class StatusServer: Service, Sendable {
    let path: String
    let state: DaemonState
    let logger: Logger

    public init(path: String, state: DaemonState, logger: Logger) {
        self.path = path
        self.state = state
        self.logger = logger
    }

    public func run() async throws {
        let directory = (path as NSString).deletingLastPathComponent
        try? PrivateFiles.createDirectory(directory)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        chmod(path, 0o660)
        logger.info("status socket", metadata: ["path": "\(path)"])
        let state = self.state
        await cancelWhenGracefulShutdown {
            try? await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask {
                            try? await connection.executeThenClose { _, outbound in
                                var line = try StatusJSON.encode(await state.current())
                                line.append(UInt8(ascii: "\n"))
                                try await outbound.write(ByteBuffer(bytes: line))
                            }
                        }
                    }
                }
            }
        }
        unlink(path)
    }

    /// Asks the daemon listening at `path`; nil when none answers (not running).
    public static func query(path: String, timeout: Duration = .seconds(2)) async -> DaemonState.Snapshot? {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(timeout.inMilliseconds))
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            return try await channel.executeThenClose { inbound, _ in
                var received = ByteBuffer()
                for try await part in inbound {
                    received.writeImmutableBuffer(part)
                    if received.readableBytes > 1 << 20 { break }
                }
                return try JSONDecoder().decode(DaemonState.Snapshot.self, from: Data(received.readableBytesView))
            }
        } catch {
            return nil
        }
    }
}

/// JSON for the status socket (plain `JSONEncoder`, sorted keys).
enum StatusJSON {
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }
}
