@testable import BLEBlueZ
import BluetoothCentral
import Testing

/// `BlueZAdapterState`: bluetoothd, the adapter in use and a waiting start, decision by decision
/// on the pure object tree (no bus).
struct BlueZAdapterStateTests {
    typealias T = BlueZObjectTreeTests
    typealias Action = BlueZAdapterState.Action

    func loaded() -> BlueZObjectTree {
        var tree = BlueZObjectTree()
        tree.load(managedObjects: T.managedObjects)
        return tree
    }

    func running() -> BlueZAdapterState {
        var state = BlueZAdapterState()
        state.owner = ":1.7"
        state.objectsLoaded = true
        return state
    }

    func power(_ on: Bool, _ tree: inout BlueZObjectTree) -> [BlueZObjectTree.Change] {
        tree.propertiesChanged(path: T.adapter, interface: BlueZ.adapter, changed: T.props([("Powered", .bool(on))]), invalidated: [])
    }

    /// Without waiting, a missing or powered-off adapter fails the start and says which adapters
    /// there are; the one named and present is chosen.
    @Test func aStartThatDoesNotWaitFailsAndSaysWhy() {
        var tree = loaded()
        var state = running()
        #expect(state.start(adapter: "hci7", wait: false, tree: tree)
                == [.startFailed(.bluez("BlueZ has no adapter hci7 (it has hci0)"))])
        _ = power(false, &tree)
        #expect(state.start(adapter: nil, wait: false, tree: tree)
                == [.startFailed(.bluez("BlueZ adapter hci0 is powered off (bluetoothctl power on)"))])
        _ = power(true, &tree)
        #expect(state.start(adapter: "hci0", wait: false, tree: tree) == [.started(T.adapter)])
        #expect(state.adapterPath == T.adapter && state.unusable(tree) == nil)
    }

    /// A waiting start says what it waits for once, tries again on each change and succeeds
    /// (saying so) when the adapter is powered; one its caller gave up is dropped.
    @Test func aWaitingStartSaysWhatItWaitsForOnceAndGoesOnWhenPowered() {
        var tree = loaded()
        var state = running()
        _ = power(false, &tree)
        let why = "BlueZ adapter hci0 is powered off (bluetoothctl power on)"
        #expect(state.start(adapter: nil, wait: true, tree: tree) == [.report("\(why); waiting", trouble: true)])
        #expect(state.resume(tree: tree, abandoned: false) == [])
        let on = power(true, &tree)
        #expect(on.flatMap { state.adapterChanged($0, tree: tree, links: 0, abandonedStart: false) }
                == [.report("BlueZ adapter hci0 is usable (powered, bluetoothd running)", trouble: false), .started(T.adapter)])
        #expect(state.waitingStart == nil && state.waitingFor == nil)

        var gaveUp = running()
        _ = power(false, &tree)
        _ = gaveUp.start(adapter: nil, wait: true, tree: tree)
        #expect(gaveUp.resume(tree: tree, abandoned: true) == [])
        #expect(gaveUp.waitingStart == nil)
    }

    /// Down with links: said once with the links that end, links and scans ended, discovery off;
    /// down again says nothing; up says it once.
    @Test func theAdapterGoingDownAndUpIsSaidOncePerChange() {
        let tree = loaded()
        var state = running()
        _ = state.start(adapter: nil, wait: false, tree: tree)
        #expect(state.adapterTransition(.down, links: 2)
                == [.report("BlueZ adapter hci0 went down (powered off or removed): 2 link(s) end", trouble: true),
                    .endLinks, .stopScans, .discoveryStopped])
        #expect(state.adapterTransition(.down, links: 0) == [.endLinks, .stopScans, .discoveryStopped])
        #expect(state.adapterTransition(.up, links: 0) == [.report("BlueZ adapter hci0 is usable again (powered, bluetoothd running)", trouble: false)])
        #expect(state.adapterTransition(.up, links: 0) == [])
    }

    /// bluetoothd leaving takes its objects; the adapter is unusable until it is back and loaded.
    @Test func bluetoothdLeavingAndComingBack() {
        let tree = loaded()
        var state = running()
        _ = state.start(adapter: nil, wait: false, tree: tree)
        #expect(state.ownerLeft(links: 1)
                == [.report("bluetoothd left the bus: 1 link(s) end; waiting for it to come back", trouble: true), .forgetObjects])
        #expect(state.unusable(tree) == "bluetoothd is not running (it left the system bus; waiting for it to come back)")
        #expect(state.ownerArrived(":1.9") == [.report("bluetoothd is back on the bus", trouble: false)])
        #expect(state.unusable(tree) == "bluetoothd is starting (its objects are not loaded yet)")
        state.objectsLoaded = true
        #expect(state.unusable(tree) == nil)
    }

    /// The bus connection lost: a waiting start fails with `backendLost`, every link ends, and the
    /// reason stays for every later call.
    @Test func theBusLostFailsAWaitingStartAndEndsTheLinks() {
        var tree = loaded()
        var state = running()
        _ = power(false, &tree)
        _ = state.start(adapter: nil, wait: true, tree: tree)
        let why = "the connection to the system bus was lost (closed)"
        #expect(state.busLost("closed")
                == [.report("D-Bus connection lost: closed", trouble: true), .startFailed(.backendLost(why)), .forgetObjects, .endLinks])
        #expect(state.lost == why && state.owner == nil)
    }

    /// The adapter in use unplugged and back under another name (same address) is followed.
    @Test func aReplugUnderAnotherNameIsFollowed() throws {
        var tree = loaded()
        var state = running()
        _ = state.start(adapter: nil, wait: false, tree: tree)
        let address = try #require(tree.adapter(at: T.adapter)?.address)
        let removed = tree.interfacesRemoved(path: T.adapter, interfaces: [BlueZ.adapter, "org.freedesktop.DBus.Properties"])
        let down = removed.flatMap { state.adapterChanged($0, tree: tree, links: 0, abandonedStart: true) }
        #expect(down.contains(.report("BlueZ adapter hci0 went down (powered off or removed)", trouble: true)))
        let added = tree.interfacesAdded(path: "/org/bluez/hci4", interfaces: T.interfaces([
            (BlueZ.adapter, T.props([("Address", .string(address)), ("Powered", .bool(true))]))]))
        let back = added.flatMap { state.adapterChanged($0, tree: tree, links: 0, abandonedStart: true) }
        #expect(back == [.report("BlueZ adapter hci0 is back as hci4", trouble: false),
                         .report("BlueZ adapter hci4 is usable again (powered, bluetoothd running)", trouble: false)])
        #expect(state.adapterPath == "/org/bluez/hci4")
    }
}
