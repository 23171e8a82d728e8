import BluetoothCentral

/// What the BlueZ backend knows of its adapter's health, and what each change means, pure: is
/// bluetoothd on the bus and are its objects loaded, which adapter is in use (followed across a
/// replug under another name), is it usable, is the bus connection lost, and does a start wait.
/// Its methods return the actions the bus thread's `BlueZCentral.State` carries out (links ended,
/// scans finished, the start answered, a line reported); they never call anything themselves.
struct BlueZAdapterState: Equatable {
    enum Action: Equatable {
        /// A loss (`trouble`) or a recovery, for the log and `onChange`.
        case report(String, trouble: Bool)
        /// End every link (their waiters answered, their notification sockets drained).
        case endLinks
        /// Stop every scan, releasing discovery (the adapter went down).
        case stopScans
        /// bluetoothd is gone with its objects: forget them, finish the scans, discovery off.
        case forgetObjects
        /// Discovery is not running any more (the adapter said so, or went down).
        case discoveryStopped
        /// Answer the waiting start: the adapter chosen (its object path).
        case started(String)
        /// Answer the waiting start: it failed.
        case startFailed(BLEError)
    }

    /// The unique bus name of bluetoothd; nil while it is not on the bus.
    var owner: String?
    /// bluetoothd's objects are loaded (false from when it leaves the bus until a new one's
    /// `GetManagedObjects` is answered).
    var objectsLoaded = false
    /// The adapter in use (`/org/bluez/hci0`); empty before the start.
    private(set) var adapterPath = ""
    /// The adapter's own address, to find it again under another name after a replug.
    private(set) var adapterAddress: String?
    /// The adapter in use was usable (bluetoothd there, the adapter present and powered) when last
    /// seen: a loss or a recovery is reported once, on the change.
    private(set) var adapterUsable = false
    /// Why the bus connection is gone, once it is (every call fails with `backendLost` then).
    private(set) var lost: String?
    /// A start that waits for bluetoothd or its adapter: the adapter it asked for (nil: the
    /// first), and what it last reported waiting for.
    private(set) var waitingStart: String??
    private(set) var waitingFor: String?

    /// The adapter's name (`hci0`), for messages.
    var adapterName: String { String(adapterPath.split(separator: "/").last ?? "") }

    /// Why the adapter in use cannot be used now (nil: it can).
    func unusable(_ tree: BlueZObjectTree) -> String? {
        if owner == nil { return "bluetoothd is not running (it left the system bus; waiting for it to come back)" }
        if !objectsLoaded { return "bluetoothd is starting (its objects are not loaded yet)" }
        return tree.adapterUnusable(adapterPath)
    }

    /// ": N link(s) end" when there are links, else nothing.
    static func ending(_ links: Int) -> String { links == 0 ? "" : ": \(links) link(s) end" }

    /// Picks the adapter for a start: the one named (or bluetoothd's first), present and powered.
    /// Otherwise the start fails, or waits when it may (`wait`).
    mutating func start(adapter name: String?, wait: Bool, tree: BlueZObjectTree) -> [Action] {
        guard let adapter = tree.adapter(named: name) else {
            let known = tree.adapters.map(\.name)
            let why = name.map { "BlueZ has no adapter \($0)" } ?? "BlueZ has no adapter"
            guard wait else { return finishWaiting(.startFailed(.bluez(why + (known.isEmpty ? "" : " (it has \(known.joined(separator: ", ")))")))) }
            return waitToStart(adapter: name, because: why)
        }
        guard adapter.powered else {
            let why = "BlueZ adapter \(adapter.name) is powered off (bluetoothctl power on)"
            guard wait else { return finishWaiting(.startFailed(.bluez(why))) }
            return waitToStart(adapter: name, because: why)
        }
        var actions: [Action] = []
        if waitingFor != nil { actions.append(.report("BlueZ adapter \(adapter.name) is usable (powered, bluetoothd running)", trouble: false)) }
        adapterPath = adapter.path
        adapterAddress = adapter.address
        adapterUsable = true
        return actions + finishWaiting(.started(adapter.path))
    }

    /// bluetoothd has no owner on the bus at the start: fail, or wait for it.
    mutating func startWithoutBluetoothd(adapter name: String?, wait: Bool, error: String) -> [Action] {
        guard wait else { return finishWaiting(.startFailed(.bluez("bluetoothd is not running (org.bluez has no owner on the system bus: \(error))"))) }
        return waitToStart(adapter: name, because: "bluetoothd is not running")
    }

    /// A start that may wait: kept until bluetoothd or the adapter changes (`resume`); what it
    /// waits for is reported once.
    private mutating func waitToStart(adapter name: String?, because why: String) -> [Action] {
        waitingStart = .some(name)
        defer { waitingFor = why }
        return waitingFor == why ? [] : [.report("\(why); waiting", trouble: true)]
    }

    private mutating func finishWaiting(_ answer: Action) -> [Action] {
        waitingStart = nil
        waitingFor = nil
        return [answer]
    }

    /// bluetoothd's objects or an adapter changed: a waiting start tries again; one its caller
    /// gave up (`abandoned`) is dropped.
    mutating func resume(tree: BlueZObjectTree, abandoned: Bool) -> [Action] {
        guard let name = waitingStart, objectsLoaded else { return [] }
        if abandoned {
            waitingStart = nil
            return []
        }
        return start(adapter: name, wait: true, tree: tree)
    }

    /// bluetoothd came onto the bus (again).
    mutating func ownerArrived(_ name: String) -> [Action] {
        owner = name
        return [.report(waitingStart == nil ? "bluetoothd is back on the bus" : "bluetoothd is running", trouble: false)]
    }

    /// bluetoothd left the bus: its objects go with it, so every link ends and scans finish.
    mutating func ownerLeft(links: Int) -> [Action] {
        [.report("bluetoothd left the bus\(Self.ending(links)); waiting for it to come back", trouble: true)] + ownerGone()
    }

    private mutating func ownerGone() -> [Action] {
        owner = nil
        objectsLoaded = false
        return [.forgetObjects]
    }

    /// The connection to the system bus is gone: it does not come back, so every call fails from
    /// now on with `backendLost` (the device sessions and the recorder end; the daemon's
    /// supervisor starts the driver again with a new connection).
    mutating func busLost(_ error: String) -> [Action] {
        let why = "the connection to the system bus was lost (\(error))"
        lost = why
        var actions: [Action] = [.report("D-Bus connection lost: \(error)", trouble: true)]
        if waitingStart != nil { actions += finishWaiting(.startFailed(.backendLost(why))) }
        return actions + ownerGone() + [.endLinks]
    }

    /// An adapter object was added, removed or changed.
    mutating func adapterChanged(_ change: BlueZObjectTree.Change, tree: BlueZObjectTree, links: Int, abandonedStart: Bool) -> [Action] {
        var actions: [Action] = []
        if !adapterPath.isEmpty, let next = tree.replacementAdapter(after: change, current: adapterPath, address: adapterAddress) {
            actions.append(.report("BlueZ adapter \(adapterName) is back as \(next.name)", trouble: false))
            adapterPath = next.path
        }
        if waitingStart != nil { actions += resume(tree: tree, abandoned: abandonedStart) }
        if let transition = tree.adapterTransition(change, adapterPath: adapterPath) { actions += adapterTransition(transition, links: links) }
        if case .changed(let path, _, let keys) = change, path == adapterPath, keys.contains("Discovering"),
           tree.adapter(at: path)?.discovering == false {
            actions.append(.discoveryStopped)
        }
        return actions
    }

    /// The adapter in use went down (powered off, removed) or came back up. Down: every link on
    /// it ends (bluetoothd may report its devices' `Connected` later, or not at all for a removed
    /// controller), scans finish and discovery counts as stopped; connects and scans fail at once
    /// until it is back, and the device sessions retry with their backoff. Up: nothing to do; the
    /// next attempts succeed. Reported once per change: bluetoothd leaving says so itself (its
    /// adapters go with it), and an adapter a new bluetoothd publishes powered off, then powers,
    /// is one recovery.
    mutating func adapterTransition(_ transition: BlueZObjectTree.AdapterTransition, links: Int) -> [Action] {
        switch transition {
        case .down:
            var actions: [Action] = []
            if adapterUsable, owner != nil {
                actions.append(.report("BlueZ adapter \(adapterName) went down (powered off or removed)\(Self.ending(links))", trouble: true))
            }
            adapterUsable = false
            return actions + [.endLinks, .stopScans, .discoveryStopped]
        case .up:
            defer { adapterUsable = true }
            return adapterUsable ? [] : [.report("BlueZ adapter \(adapterName) is usable again (powered, bluetoothd running)", trouble: false)]
        }
    }
}
