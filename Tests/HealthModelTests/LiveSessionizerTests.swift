import Foundation
import HealthModel
import Testing

/// The one sessionizer of every live driver family, fed the model's values directly (the BLE
/// side is tested through GATT readings in BLEDriverTests, the ANT side in ANTDriverTests).
@Suite struct LiveSessionizerTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    @Test("ids and sources carry the driver: the same values through two drivers are two workouts")
    func theDriverIsPartOfTheIdentity() {
        var ant = LiveSessionizer(configuration: .init(driver: "ant", gap: 60))
        var ble = LiveSessionizer(configuration: .init(driver: "ble", gap: 60))
        for i in 0..<3 {
            _ = ant.receive(device: "strap", at: at(Double(i)), .stream(StreamPoint(heartRate: 120)))
            _ = ble.receive(device: "strap", at: at(Double(i)), .stream(StreamPoint(heartRate: 120)))
        }
        let a = ant.finish().workouts, b = ble.finish().workouts
        #expect(a.count == 1 && b.count == 1)
        #expect(a[0].workout.source == Source(driver: "ant", device: "strap"))
        #expect(a[0].workout.id == RecordID.derive("workout", "ant", "strap", String(Int(t0.timeIntervalSince1970 * 1000))))
        #expect(a[0].workout.id != b[0].workout.id)
        // The same values again give the same ids (a re-run stores nothing new).
        var again = LiveSessionizer(configuration: .init(driver: "ant", gap: 60))
        for i in 0..<3 { _ = again.receive(device: "strap", at: at(Double(i)), .stream(StreamPoint(heartRate: 120))) }
        #expect(again.finish().workouts[0].workout.id == a[0].workout.id)
    }

    @Test("distance deltas add up from the workout's start; the first of a workout is not counted")
    func distanceDeltas() {
        var s = LiveSessionizer(configuration: .init(driver: "ant", gap: 10))
        var pieces: [WorkoutProgress] = []
        for (i, delta) in [50.0, 4, 4, 4].enumerated() {
            pieces += s.receive(device: "wheel", at: at(Double(i)), .stream(StreamPoint(speedMps: 4, distanceDeltaM: delta))).workouts
        }
        pieces += s.flush(now: at(3)).workouts
        #expect(pieces.count == 1)
        #expect(pieces[0].workout.samples.map(\.distanceM) == [0, 4, 8, 12])
        #expect(pieces[0].workout.distanceM == 12)
        // After the gap a new workout starts from 0 again; the old one's final piece comes first.
        let later = s.receive(device: "wheel", at: at(100), .stream(StreamPoint(speedMps: 4, distanceDeltaM: 400)))
        #expect(later.workouts.count == 1 && later.workouts[0].isFinal && later.workouts[0].workout.distanceM == 12)
        #expect(!s.continues(device: "wheel", at: at(111)) && s.continues(device: "wheel", at: at(110)))
        let next = s.finish().workouts
        #expect(next.count == 1 && next[0].workout.distanceM == 0 && next[0].workout.start == at(100))
        // Nonsense deltas (negative, infinite) are no distance.
        var odd = LiveSessionizer(configuration: .init(driver: "ant"))
        for (i, delta) in [0.0, -5, .infinity].enumerated() {
            _ = odd.receive(device: "w", at: at(Double(i)), .stream(StreamPoint(distanceDeltaM: delta)))
        }
        #expect(odd.finish().workouts[0].workout.distanceM == 0)
    }

    @Test("battery levels are recorded when they change or after the interval; measurements at once")
    func pointValues() {
        var s = LiveSessionizer(configuration: .init(driver: "ant", batteryInterval: 600))
        let levels = [(0.0, 80), (10, 80), (20, 79), (700, 79)].flatMap { time, percent in
            s.receive(device: "pod", at: at(time), .battery(percent: percent)).records
        }
        #expect(levels.count == 3)
        let weighed = s.receive(device: "scale", at: at(5), .measurements([
            PointMeasurement(.weight, 72.5, extra: ["user_id": 1]), PointMeasurement(.bodyFat, .nan),
        ])).records
        #expect(weighed.count == 1)
        guard case .measurement(let m) = weighed.first else { Issue.record("no measurement"); return }
        #expect(m.kind == .weight && m.value == 72.5 && m.time == at(5) && m.extra == ["user_id": 1])
        #expect(m.source == Source(driver: "ant", device: "scale"))
    }
}
