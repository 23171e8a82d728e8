import Testing
@testable import HealthGate

/// The forwarder's wake-up between cycles.
@Suite struct DoorbellTests {
    @Test func ringsBeforeAndDuringAWaitAndTimesOut() async {
        let bell = Doorbell()
        #expect(await bell.wait(upTo: .milliseconds(10)) == false, "time up: nobody rang")
        bell.ring()
        #expect(await bell.wait(upTo: .seconds(600)) == true, "rung before the wait: at once")
        bell.ring()
        bell.reset()
        #expect(await bell.wait(upTo: .milliseconds(10)) == false, "reset forgets a ring")
        Task {
            try? await Task.sleep(for: .milliseconds(50))
            bell.ring()
        }
        #expect(await bell.wait(upTo: .seconds(600)) == true, "rung during the wait")
    }

    @Test func cancellationEndsAWait() async {
        let bell = Doorbell()
        let waiting = Task { await bell.wait(upTo: .seconds(600)) }
        try? await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        #expect(await waiting.value == false)
        bell.ring()
        #expect(await bell.wait(upTo: .seconds(600)) == true, "a ring after the cancelled wait still counts")
    }
}
