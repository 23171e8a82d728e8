import HealthGateServer

print("healthgate-server \(ServerVersion.current)")
