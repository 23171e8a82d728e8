import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization
import SyncProtocol

/// Faults for testing clients (the forwarder's retry and idempotency), off unless asked for.
///
/// A fraction `rate` of upload requests (`POST /v1/records`) fails in one of `kinds`, chosen by
/// a generator seeded with `seed`: the same seed and the same sequence of uploads give the same
/// faults (concurrent uploads draw in arrival order).
public struct FaultPlan: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// 503 with `Retry-After: 1`, before the database is touched.
        case unavailable
        /// No answer for `stall` (longer than a client's timeout), then 503; nothing stored.
        case stall
        /// The upload is processed and stored, then the connection is closed without an
        /// answer: stored but not acknowledged.
        case drop
    }

    public var rate: Double
    public var seed: UInt64
    public var kinds: [Kind]
    public var stall: Duration

    public init(rate: Double, seed: UInt64, kinds: [Kind] = Kind.allCases, stall: Duration = .seconds(30)) {
        self.rate = rate
        self.seed = seed
        self.kinds = kinds
        self.stall = stall
    }
}

/// Draws the faults of a ``FaultPlan`` (SplitMix64: small and the same on every platform).
final class FaultInjector: Sendable {
    let plan: FaultPlan
    private let state: Mutex<UInt64>

    init(plan: FaultPlan) {
        self.plan = plan
        state = Mutex(plan.seed)
    }

    /// The fault for the next upload, or nil.
    func next() -> FaultPlan.Kind? {
        state.withLock { state in
            let roll = Double(Self.splitMix(&state) >> 11) / Double(1 << 53)
            let pick = Self.splitMix(&state)
            guard roll < plan.rate, !plan.kinds.isEmpty else { return nil }
            return plan.kinds[Int(pick % UInt64(plan.kinds.count))]
        }
    }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Applies the injector's faults to uploads.
struct FaultMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let injector: FaultInjector

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        guard request.method == .post, request.uri.path == SyncAPI.prefix + "/records", let fault = injector.next() else {
            return try await next(request, context)
        }
        context.logger.notice("fault injection: \(fault.rawValue)")
        switch fault {
        case .unavailable:
            throw APIError.unavailable("fault injection: the server is unavailable (try again)", retryAfter: 1)
        case .stall:
            try await Task.sleep(for: injector.plan.stall)
            throw APIError.unavailable("fault injection: the server stalled (try again)", retryAfter: 1)
        case .drop:
            let response = try await next(request, context)
            // The upload is stored: close without answering it.
            try? await context.channel.close().get()
            return response
        }
    }
}
