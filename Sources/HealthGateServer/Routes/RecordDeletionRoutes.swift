import Foundation
import Hummingbird
import SyncProtocol

/// Deleting records on request. A deleted record becomes a tombstone in the user's history (id,
/// type, version and `deleted: true`, its data gone), so that the account's other devices learn
/// of the deletion when they pull; uploading the same or an older version again is a duplicate
/// and does not bring it back.
struct RecordDeletionRoutes {
    let deps: ServerDependencies

    func add(to group: RouterGroup<ServerContext>) {
        group.delete("records/:id", use: deleteOne)
        group.delete("records", use: deleteAll)
    }

    /// `DELETE /v1/records/{id}`: 204 (also for a record deleted before); 404 when the user has
    /// no record with this id.
    @Sendable func deleteOne(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let id = (context.parameters.get("id")?.removingPercentEncoding ?? "").lowercased()
        guard try await deps.store.deleteRecord(id: id, userId: principal.userId, deviceId: principal.deviceId, now: Date()) else {
            throw APIError.notFound("no record \(id) in this account")
        }
        context.logger.info("record deleted", metadata: ["device": "\(principal.deviceId)"])
        return Response(status: .noContent)
    }

    /// `DELETE /v1/records`: every record of the user; 200 with how many were deleted.
    @Sendable func deleteAll(_ request: Request, context: ServerContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let deleted = try await deps.store.deleteAllRecords(userId: principal.userId, deviceId: principal.deviceId, now: Date())
        context.logger.info("records deleted", metadata: ["device": "\(principal.deviceId)", "deleted": "\(deleted)"])
        return JSONResponse.make(RecordDeletionResponse(deleted: deleted))
    }
}
