public import Foundation
import HealthModel
public import HummingbirdCore
public import Logging
public import NIOCore
import NIOSSL
import NIOTLS
public import ServiceLifecycle
import Synchronization
public import UnixSignals

/// The server's certificate chain and private key (PEM files), loaded into a TLS context that a
/// reload replaces: connections open keep the context they started with, new ones get the new
/// one, so a certificate renewed on disk is taken up without dropping anybody
/// (``TLSReloadService``: on SIGHUP).
///
/// TLS 1.2 and 1.3 only, BoringSSL's default cipher suites (forward secret AEAD ciphers), ALPN
/// `http/1.1`.
public final class TLSCertificates: Sendable {
    public let certificatePath: String
    public let keyPath: String
    private let state: Mutex<(context: NIOSSLContext, notAfter: Date)>

    /// SIGHUP, trapped from the moment the certificates were loaded (see ``TLSReloadService``).
    public let hangUps: UnixSignalsSequence

    /// Loads the files and traps SIGHUP, which reloads them once the server runs.
    public init(certificate: String, key: String) async throws {
        certificatePath = certificate
        keyPath = key
        state = Mutex(try Self.load(certificate: certificate, key: key))
        hangUps = await UnixSignalsSequence(trapping: .sighup)
    }

    /// The context new connections get.
    var context: NIOSSLContext { state.withLock { $0.context } }

    /// When the certificate in use stops being valid.
    public var notAfter: Date { state.withLock { $0.notAfter } }

    /// Reads the files again; on success new connections get the new certificate (answers its
    /// expiry), on failure nothing changes and the error says why.
    @discardableResult
    public func reload() throws -> Date {
        let loaded = try Self.load(certificate: certificatePath, key: keyPath)
        state.withLock { $0 = loaded }
        return loaded.notAfter
    }

    /// What a certificate's state is worth saying in the log: expired, or expiring within 14 days.
    public func warning(now: Date = Date()) -> String? {
        let left = notAfter.timeIntervalSince(now)
        if left <= 0 { return "the certificate \(certificatePath) expired on \(ISO8601.string(notAfter)): clients will refuse it" }
        if left < 14 * 86_400 {
            return "the certificate \(certificatePath) expires on \(ISO8601.string(notAfter)) (in \(Int(left / 86_400)) days)"
        }
        return nil
    }

    /// What the private key file's permissions are worth saying: readable by every user, or by a
    /// group the server is not in (the way docs/server.md sets it up, 0640 owned by root and the
    /// server's group, is fine: the server reads it through its group). Pure: the file's mode and
    /// group, and the server's groups, are inputs.
    public static func keyAccessWarning(path: String, mode: UInt32, fileGroup: UInt32, serverGroups: Set<UInt32>) -> String? {
        if mode & 0o007 != 0 {
            return "the private key \(path) can be read by every user: chmod 600 it (or 640, owned by the server's group)"
        }
        if mode & 0o070 != 0, !serverGroups.contains(fileGroup) {
            return "the private key \(path) can be read by group \(fileGroup), which the server is not in: chmod 600 it (or give it the server's group)"
        }
        return nil
    }

    /// ``keyAccessWarning(path:mode:fileGroup:serverGroups:)`` for the file at `path` and this process.
    public static func keyAccessWarning(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        var groups = [gid_t](repeating: 0, count: Int(max(getgroups(0, nil), 0)))
        let count = getgroups(Int32(groups.count), &groups)
        let serverGroups = Set(groups.prefix(max(Int(count), 0)).map { UInt32($0) } + [UInt32(getegid())])
        return keyAccessWarning(path: path, mode: UInt32(info.st_mode) & 0o777, fileGroup: UInt32(info.st_gid), serverGroups: serverGroups)
    }

    private static func load(certificate: String, key: String) throws -> (context: NIOSSLContext, notAfter: Date) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw TLSSetupError(description: "\(certificate): not a readable PEM certificate chain (\(error))")
        }
        guard let leaf = chain.first else { throw TLSSetupError(description: "\(certificate): no certificate in the file") }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        } catch {
            throw TLSSetupError(description: "\(key): not a readable PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                                     privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSSetupError(description: "\(certificate) and \(key) do not make a TLS context (a key of another certificate?): \(error)")
        }
        return (context, Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)))
    }
}

/// Why the certificate or key could not be used.
public struct TLSSetupError: Error, CustomStringConvertible {
    public var description: String
}

/// On SIGHUP, reads the certificate and key again (``TLSCertificates/reload()``); a failed
/// reload keeps the certificate in use and says why.
///
/// The signal is trapped before the server starts (``TLSCertificates/hangUps``, made by
/// ``TLSCertificates/trappingHangUps()``): a SIGHUP that came before this service ran would
/// otherwise end the process.
public struct TLSReloadService: Service {
    let certificates: TLSCertificates
    let hangUps: UnixSignalsSequence
    let logger: Logger

    public init(certificates: TLSCertificates, hangUps: UnixSignalsSequence, logger: Logger) {
        self.certificates = certificates
        self.hangUps = hangUps
        self.logger = logger
    }

    public func run() async throws {
        for await _ in hangUps.cancelOnGracefulShutdown() {
            do {
                let notAfter = try certificates.reload()
                logger.notice("certificate reloaded from \(certificates.certificatePath): valid until \(ISO8601.string(notAfter))")
                if let warning = certificates.warning() { logger.warning("\(warning)") }
            } catch {
                logger.error("certificate reload failed, still serving the previous one: \(error)")
            }
        }
    }
}

/// A child channel behind TLS: the server's TLS handler first (with the context current when the
/// connection came), a handshake deadline, then `base` (the connection guard and HTTP/1).
public struct ReloadableTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
    public typealias Value = Base.Value
    let base: Base
    let certificates: TLSCertificates
    /// How long the handshake may take (a client trickling it would otherwise hold the connection).
    let handshakeTimeout: TimeAmount

    public init(base: Base, certificates: TLSCertificates, handshakeTimeout: TimeAmount) {
        self.base = base
        self.certificates = certificates
        self.handshakeTimeout = handshakeTimeout
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: certificates.context))
            try channel.pipeline.syncOperations.addHandler(HandshakeDeadlineHandler(timeout: handshakeTimeout))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// Closes a connection whose TLS handshake has not completed within the timeout; then steps out.
final class HandshakeDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            deadline?.cancel()
            deadline = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }
}
