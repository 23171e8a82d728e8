import Foundation
import MetricsEndpoint
import SyncProtocol
import Testing
import TestSupport

/// What an operator watches: `/v1/health` says whether the database answers, and
/// `--metrics-address` serves Prometheus metrics apart from the API.
@Suite struct OperationsTests {
    /// PostgreSQL stopped: health answers 503 naming the database (a load balancer takes the
    /// process out), and 200 again once PostgreSQL is back.
    @Test func healthSaysWhetherTheDatabaseAnswers() async throws {
        let cluster = try await PostgresCluster.start()
        let server = try await ServerProcess.start(postgres: cluster, postgresOptions: "pool_wait=1")
        let api = APIClient(server)
        let up = try await api.send(.GET, "/v1/health")
        #expect(up.status == 200)
        #expect(try up.decode(HealthResponse.self).database == "ok")

        try await cluster.stop(mode: "immediate")
        let down = try await api.send(.GET, "/v1/health")
        #expect(down.status == 503 && down.headers.first(name: "Retry-After") != nil, "\(down.text)")
        let body = try down.decode(HealthResponse.self)
        #expect(body.status == "unavailable" && body.database == "unavailable")
        // A request that needs the database: 503 with Retry-After too, never a hang or a 500.
        let login = try await api.login("ann@example.org", "long enough password")
        #expect(login.status == 503 && login.headers.first(name: "Retry-After") != nil, "\(login.text)")

        try await cluster.start()
        try await eventually("health is 200 again") { try await api.send(.GET, "/v1/health").status == 200 }
        try await cluster.stop()
    }

    @Test func metricsCountRequestsRecordsAndConnections() async throws {
        let port = try unusedPort()
        let server = try await ServerProcess.start(extraArguments: ["--metrics-address", "127.0.0.1:\(port)"])
        let (client, _) = try await APIClient(server).account("metrics@example.org")
        let water = Make.habit("water", time: "2026-03-02T10:00:00Z")
        let future = Make.habit("later", time: "2099-01-01T00:00:00Z")
        #expect(try await client.uploadStatuses([water, future]) == [.accepted, .rejected])
        #expect(try await client.uploadStatuses([water]) == [.duplicate])
        #expect(try await client.send(.GET, "/v1/records?after=0").status == 200)

        let metrics = try await Tool.run("/usr/bin/python3", ["-c", """
            import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:\(port)/metrics", timeout=10).read().decode())
            """])
        let text = metrics.stdout
        #expect(text.contains(#"healthgate_server_records_total{outcome="accepted"} 1"#), "\(text)")
        #expect(text.contains(#"healthgate_server_records_total{outcome="duplicate"} 1"#))
        #expect(text.contains(#"healthgate_server_records_total{outcome="rejected"} 1"#))
        #expect(text.contains(#"healthgate_server_request_duration_seconds_count{route="/v1/records",method="POST",status="2xx"} 2"#))
        #expect(text.contains(#"route="/v1/sessions""#) && text.contains("healthgate_server_connections_open"))
        if server.store == .postgres {
            #expect(text.contains("healthgate_server_database_pool_size 20"))
        }
        // Only /metrics, and not on the API's port.
        #expect(try await APIClient(server).send(.GET, "/metrics").status == 404)
    }

    /// Anyone who can reach the metrics address could hold connections until the process runs
    /// out of descriptors. At most `MetricsServer.maxConnections` are kept (the rest closed at
    /// once), each for 10 s at most; a scrape gets through once they are gone.
    @Test func theMetricsEndpointKeepsFewConnectionsAndNotForLong() async throws {
        let port = try unusedPort()
        let server = try await ServerProcess.start(extraArguments: ["--metrics-address", "127.0.0.1:\(port)"])
        let pid = server.process.processIdentifier
        let before = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        let (held, opened, closedSoon) = try await onOwnThread { () -> ([RawConnection], Int, Int) in
            let held = try (0..<100).map { _ in try RawConnection(port: port) }
            Thread.sleep(forTimeInterval: 1)
            let opened = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
            let closedSoon = held.filter { $0.read(timeout: 100) == .closed }.count
            return (held, opened, closedSoon)
        }
        #expect(opened - before <= MetricsServer.maxConnections, "\(opened - before) descriptors more with 100 idle connections")
        #expect(closedSoon >= 100 - MetricsServer.maxConnections, "only \(closedSoon) of 100 were closed at once")
        let closedLater = try await onOwnThread { held.filter { $0.read(timeout: 15_000) == .closed }.count }
        #expect(closedLater == 100, "\(closedLater) of 100 idle connections were closed within 15 s")
        let metrics = try await Tool.run("/usr/bin/python3", ["-c", """
            import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:\(port)/metrics", timeout=10).status)
            """])
        #expect(metrics.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200", "\(metrics.stderr)")
    }
}
