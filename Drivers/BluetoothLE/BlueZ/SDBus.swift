import CSDBus
import Foundation
import Synchronization

/// An error reply (or a failure to send) of a D-Bus call.
public struct DBusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The error name (`org.bluez.Error.Failed`), or `errno` text for local failures.
    public var name: String
    public var message: String
    public var description: String { message.isEmpty ? name : "\(name): \(message)" }
}

/// One connection to the system bus through sd-bus, owned by its own thread: the thread runs the
/// loop (`poll` on the bus, a wake-up eventfd and any watched descriptors, then
/// `sd_bus_process`), and every use of the bus happens on it, through `post`. Nothing here
/// blocks Swift's task pool. sd-bus objects are not thread-safe; this class keeps them on the
/// one thread.
final class SDBus: @unchecked Sendable {
    /// The bus, and everything below, belong to the bus thread.
    private var bus: OpaquePointer?
    /// A pipe that wakes the loop: `post` writes a byte, the loop drains it.
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private var running = true
    private var watches: [Int32: Watch] = [:]
    private var matchBoxes: [Box] = []
    /// The handlers of exported objects, by their sd-bus slot.
    private var objectBoxes: [OpaquePointer: Box] = [:]
    /// Kept alive as long as the loop runs (the handlers' owner).
    var owner: AnyObject?
    /// Called on the bus thread when the connection to the bus is lost.
    var onConnectionLost: ((DBusError) -> Void)?

    /// A watched descriptor: its handler, and when it is closed at the latest (`unwatch(_:within:)`).
    private struct Watch {
        var handler: (Int16) -> Void
        var closeBy: ContinuousClock.Instant?
    }

    final class Box {
        let handler: (OpaquePointer) -> Void
        init(_ handler: @escaping (OpaquePointer) -> Void) { self.handler = handler }
    }

    /// Opens the system bus (`DBUS_SYSTEM_BUS_ADDRESS` or the default socket), or the bus at
    /// `address` (a D-Bus address: `unix:path=...`), on a new thread and returns once it is open.
    static func open(address: String? = nil) async throws(DBusError) -> SDBus {
        let result: Result<SDBus, DBusError> = await withCheckedContinuation { c in
            let thread = Thread {
                var bus: OpaquePointer?
                let r = address.map { hg_sd_bus_open_address(&bus, $0) } ?? sd_bus_open_system(&bus)
                guard r >= 0, let bus else {
                    // libsystemd is loaded on first use (Sources/CSDBus): say so when it cannot be.
                    let reason = hg_sd_bus_load_error().map { String(cString: $0) } ?? String(cString: strerror(-r))
                    c.resume(returning: .failure(DBusError(name: address.map { "bus \($0)" } ?? "system bus", message: reason)))
                    return
                }
                var pipeFDs: [Int32] = [-1, -1]
                _ = pipe(&pipeFDs)
                for fd in pipeFDs {
                    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                }
                let sd = SDBus(bus: bus, wakeFDs: (pipeFDs[0], pipeFDs[1]))
                c.resume(returning: .success(sd))
                sd.loop()
            }
            thread.name = "healthgate-dbus"
            thread.start()
        }
        return try result.get()
    }

    private init(bus: OpaquePointer, wakeFDs: (read: Int32, write: Int32)) {
        self.bus = bus
        self.wakeFD = wakeFDs.read
        self.wakeWriteFD = wakeFDs.write
    }

    /// Runs `job` on the bus thread (from any thread).
    func post(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        var one: UInt8 = 1
        _ = Glibc.write(wakeWriteFD, &one, 1)
    }

    /// Ends the loop; the thread closes the bus and the watched descriptors. Any thread.
    func close() {
        post { self.running = false }
    }

    /// The thread's loop. After the bus connection is lost it goes on (without the bus) until
    /// `close()`, so posted work still runs and its calls fail at once instead of waiting forever.
    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while running {
            if let bus {
                var r: Int32
                repeat { r = sd_bus_process(bus, nil) } while r > 0
                if r < 0 {
                    connectionLost(Self.failure(r, "system bus"))
                    continue
                }
            }
            let ready = jobs.withLock { j in defer { j = [] }; return j }
            for job in ready { job() }
            guard running else { break }
            if !ready.isEmpty { continue }  // a job may have queued messages or work
            var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            var timeout: Int32 = -1
            if let bus {
                fds.append(pollfd(fd: sd_bus_get_fd(bus), events: Int16(sd_bus_get_events(bus)), revents: 0))
                var deadline: UInt64 = 0
                if sd_bus_get_timeout(bus, &deadline) > 0, deadline != UInt64.max {
                    var now = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &now)
                    let nowUs = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
                    timeout = deadline <= nowUs ? 0 : Int32(min((deadline - nowUs + 999) / 1000, 60_000))
                }
            }
            if let closeBy = watches.values.compactMap(\.closeBy).min() {
                let ms = max(0, Self.milliseconds(closeBy - .now))
                timeout = timeout < 0 ? ms : min(timeout, ms)
            }
            let first = fds.count
            let watched = Array(watches.keys)
            for fd in watched { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            let n = poll(&fds, nfds_t(fds.count), timeout)
            if n < 0 && errno != EINTR { break }
            if fds[0].revents != 0 { while Glibc.read(wakeFD, &buffer, buffer.count) > 0 {} }
            for (i, fd) in watched.enumerated() where fds[first + i].revents != 0 {
                watches[fd]?.handler(fds[first + i].revents)
            }
            let now = ContinuousClock.now
            for (fd, watch) in watches where watch.closeBy.map({ $0 <= now }) == true { unwatch(fd) }
        }
        for fd in Array(watches.keys) { unwatch(fd) }
        watches = [:]
        if let bus { sd_bus_flush_close_unref(bus) }
        bus = nil
        Glibc.close(wakeFD)
        Glibc.close(wakeWriteFD)
        onConnectionLost = nil
        owner = nil
    }

    /// The bus is gone; watched descriptors are not the bus's: they stay until their owners
    /// unwatch them (an AcquireNotify socket still holds what bluetoothd wrote before it left).
    private func connectionLost(_ error: DBusError) {
        if let bus { sd_bus_flush_close_unref(bus) }
        bus = nil
        onConnectionLost?(error)
    }

    /// Whole milliseconds of `d`, rounded up, at most a minute (a poll timeout).
    private static func milliseconds(_ d: Duration) -> Int32 {
        let (seconds, attoseconds) = d.components
        guard seconds < 60 else { return 60_000 }
        return Int32(seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    // MARK: On the bus thread only

    /// Watches `fd` (readable, hang-up or error) until `unwatch`; the handler gets `revents`.
    func watch(_ fd: Int32, _ handler: @escaping (Int16) -> Void) { watches[fd] = Watch(handler: handler) }

    /// Stops watching `fd` and closes it, after its handler read what it still holds (the
    /// handler is called once more, with `POLLIN`).
    func unwatch(_ fd: Int32) {
        guard let watch = watches.removeValue(forKey: fd) else { return }
        watch.handler(Int16(POLLIN))
        Glibc.close(fd)
    }

    /// Goes on watching `fd` until its handler unwatches it (its writer closed it, say) or
    /// `grace` has passed, whichever is first; then as `unwatch`.
    func unwatch(_ fd: Int32, within grace: Duration) {
        guard let watch = watches[fd] else { return }
        watches[fd]?.closeBy = min(watch.closeBy ?? .now + grace, .now + grace)
    }

    /// Calls a method without waiting: `reply` gets the reply's arguments or the error, on the
    /// bus thread. `args` are appended with `append` (a `.dict` as `a{sv}`).
    func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ args: [DBusValue] = [],
              timeout: Duration, reply: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        guard let bus else { return reply(.failure(DBusError(name: "system bus", message: "not connected"))) }
        var message: OpaquePointer?
        let r = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard r >= 0, let message else { return reply(.failure(Self.failure(r, "new method call"))) }
        defer { sd_bus_message_unref(message) }
        do {
            for arg in args { try Self.append(arg, to: message) }
        } catch {
            return reply(.failure(error))
        }
        send(message, member: member, timeout: timeout, reply: reply)
    }

    /// Sends a method call built by the caller; `reply` gets the reply's arguments or the error.
    private func send(_ message: OpaquePointer, member: String, timeout: Duration,
                      reply: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        guard let bus else { return reply(.failure(DBusError(name: "system bus", message: "not connected"))) }
        let box = Box { m in
            if sd_bus_message_is_method_error(m, nil) > 0, let e = sd_bus_message_get_error(m) {
                reply(.failure(DBusError(name: e.pointee.name.map { String(cString: $0) } ?? "error",
                                         message: e.pointee.message.map { String(cString: $0) } ?? "")))
                return
            }
            do throws(DBusError) { reply(.success(try Self.readAll(m))) } catch { reply(.failure(error)) }
        }
        let userdata = Unmanaged.passRetained(box).toOpaque()
        let usec = UInt64(max(timeout.components.seconds, 0)) * 1_000_000 + UInt64(max(timeout.components.attoseconds, 0) / 1_000_000_000_000)
        let r = sd_bus_call_async(bus, nil, message, { m, userdata, _ in
            guard let m, let userdata else { return 0 }
            Unmanaged<Box>.fromOpaque(userdata).takeRetainedValue().handler(m)
            return 0
        }, userdata, usec)
        if r < 0 {
            Unmanaged<Box>.fromOpaque(userdata).release()
            reply(.failure(Self.failure(r, "call \(member)")))
        }
    }

    /// Adds a match rule; `handler` gets each matching message (member, path, sender, arguments).
    func addMatch(_ rule: String, _ handler: @escaping (Signal) -> Void) throws(DBusError) {
        guard let bus else { throw DBusError(name: "system bus", message: "not connected") }
        let box = Box { m in
            guard let args = try? Self.readAll(m) else { return }
            handler(Signal(member: sd_bus_message_get_member(m).map { String(cString: $0) } ?? "",
                           path: sd_bus_message_get_path(m).map { String(cString: $0) } ?? "",
                           sender: sd_bus_message_get_sender(m).map { String(cString: $0) } ?? "", args: args))
        }
        matchBoxes.append(box)
        let r = sd_bus_add_match(bus, nil, rule, { m, userdata, _ in
            guard let m, let userdata else { return 0 }
            Unmanaged<Box>.fromOpaque(userdata).takeUnretainedValue().handler(m)
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
        if r < 0 { throw Self.failure(r, "add match") }
    }

    struct Signal {
        var member: String
        var path: String
        var sender: String
        var args: [DBusValue]
    }

    // MARK: Objects others call (the pairing agent)

    /// A method call to an object exported with `exportObject`. Holds a reference to the message
    /// until it is answered (`reply` or `replyError`, on the bus thread).
    final class MethodCall: @unchecked Sendable {
        let interface: String
        let member: String
        let sender: String
        let args: [DBusValue]
        fileprivate var message: OpaquePointer?

        fileprivate init(_ m: OpaquePointer, args: [DBusValue]) {
            interface = sd_bus_message_get_interface(m).map { String(cString: $0) } ?? ""
            member = sd_bus_message_get_member(m).map { String(cString: $0) } ?? ""
            sender = sd_bus_message_get_sender(m).map { String(cString: $0) } ?? ""
            self.args = args
            message = sd_bus_message_ref(m)
        }

        deinit { if let message { sd_bus_message_unref(message) } }
    }

    /// Exports an object at `path`: every method call to it goes to `handler`, which answers it
    /// now or later with `reply`/`replyError`. Returns a token for `removeObject`.
    func exportObject(_ path: String, _ handler: @escaping (MethodCall) -> Void) throws(DBusError) -> OpaquePointer {
        guard let bus else { throw DBusError(name: "system bus", message: "not connected") }
        let box = Box { m in
            guard let args = try? Self.readAll(m) else { return }
            handler(MethodCall(m, args: args))
        }
        var slot: OpaquePointer?
        let r = sd_bus_add_object(bus, &slot, path, { m, userdata, _ in
            guard let m, let userdata else { return 0 }
            // Only method calls; 1: handled (the handler answers, now or later).
            guard sd_bus_message_get_member(m) != nil else { return 0 }
            Unmanaged<Box>.fromOpaque(userdata).takeUnretainedValue().handler(m)
            return 1
        }, Unmanaged.passUnretained(box).toOpaque())
        guard r >= 0, let slot else { throw Self.failure(r, "export \(path)") }
        objectBoxes[slot] = box
        return slot
    }

    /// Stops answering calls to an object exported with `exportObject`.
    func removeObject(_ slot: OpaquePointer) {
        guard objectBoxes.removeValue(forKey: slot) != nil else { return }
        sd_bus_slot_unref(slot)
    }

    /// Answers a method call with `args` (once; later answers are ignored).
    func reply(_ call: MethodCall, _ args: [DBusValue] = []) {
        guard let bus, let message = call.message else { return }
        call.message = nil
        defer { sd_bus_message_unref(message) }
        var out: OpaquePointer?
        guard sd_bus_message_new_method_return(message, &out) >= 0, let out else { return }
        defer { sd_bus_message_unref(out) }
        do { for arg in args { try Self.append(arg, to: out) } } catch { return }
        _ = sd_bus_send(bus, out, nil)
    }

    /// Answers a method call with the error `name` (`org.bluez.Error.Rejected`).
    func replyError(_ call: MethodCall, _ name: String, _ text: String) {
        guard let bus, let message = call.message else { return }
        call.message = nil
        defer { sd_bus_message_unref(message) }
        var out: OpaquePointer?
        let r = name.withCString { n in
            text.withCString { t in
                var error = sd_bus_error(name: n, message: t, _need_free: 0)
                return sd_bus_message_new_method_error(message, &out, &error)
            }
        }
        guard r >= 0, let out else { return }
        defer { sd_bus_message_unref(out) }
        _ = sd_bus_send(bus, out, nil)
    }

    /// `org.freedesktop.DBus.Properties.Set(interface, name, value)` without waiting.
    func setProperty(_ destination: String, _ path: String, _ interface: String, _ name: String, _ value: DBusValue,
                     timeout: Duration, reply: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        // The value goes in a variant: `.dict` is the one DBusValue written with variants, so
        // write the message here.
        guard let bus else { return reply(.failure(DBusError(name: "system bus", message: "not connected"))) }
        var message: OpaquePointer?
        let r = sd_bus_message_new_method_call(bus, &message, destination, path, "org.freedesktop.DBus.Properties", "Set")
        guard r >= 0, let message else { return reply(.failure(Self.failure(r, "new method call"))) }
        defer { sd_bus_message_unref(message) }
        do throws(DBusError) {
            try Self.append(.string(interface), to: message)
            try Self.append(.string(name), to: message)
            guard sd_bus_message_open_container(message, Self.code("v"), Self.signature(value)) >= 0 else {
                throw DBusError(name: "append", message: "variant")
            }
            try Self.append(value, to: message)
            guard sd_bus_message_close_container(message) >= 0 else { throw DBusError(name: "append", message: "variant") }
        } catch {
            return reply(.failure(error))
        }
        send(message, member: "Set", timeout: timeout, reply: reply)
    }

    // MARK: Messages

    private static func failure(_ r: Int32, _ what: String) -> DBusError {
        DBusError(name: what, message: String(cString: strerror(-r)))
    }

    private static func code(_ c: Character) -> CChar { CChar(bitPattern: c.asciiValue!) }

    /// Every argument of a message, in order.
    static func readAll(_ m: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var out: [DBusValue] = []
        while sd_bus_message_at_end(m, 0) == 0 {
            out.append(try read(m))
        }
        return out
    }

    /// The message's next complete value; variants are unwrapped; a file descriptor is
    /// duplicated (the caller owns the copy).
    static func read(_ m: OpaquePointer) throws(DBusError) -> DBusValue {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(m, &type, &contentsPointer)
        guard r > 0 else { throw failure(r == 0 ? -EBADMSG : r, "read message") }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        func basic<T: BitwiseCopyable>(_ zero: T) throws(DBusError) -> T {
            var v = zero
            let r = sd_bus_message_read_basic(m, type, &v)
            guard r > 0 else { throw failure(r == 0 ? -EBADMSG : r, "read basic") }
            return v
        }
        func string() throws(DBusError) -> String {
            var p: UnsafePointer<CChar>?
            let r = sd_bus_message_read_basic(m, type, &p)
            guard r > 0, let p else { throw failure(r == 0 ? -EBADMSG : r, "read string") }
            return String(cString: p)
        }
        func enter(_ t: Character) throws(DBusError) {
            let r = sd_bus_message_enter_container(m, code(t), contents)
            guard r > 0 else { throw failure(r == 0 ? -EBADMSG : r, "enter container") }
        }
        func exit() throws(DBusError) {
            let r = sd_bus_message_exit_container(m)
            guard r >= 0 else { throw failure(r, "exit container") }
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return .byte(try basic(UInt8(0)))
        case UInt8(ascii: "b"): return .bool(try basic(Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try basic(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try basic(UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try basic(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(Double(0)))
        case UInt8(ascii: "s"): return .string(try string())
        case UInt8(ascii: "o"): return .objectPath(try string())
        case UInt8(ascii: "g"): return .signature(try string())
        case UInt8(ascii: "h"): return .fd(fcntl(try basic(Int32(-1)), F_DUPFD_CLOEXEC, 3))
        case UInt8(ascii: "v"):
            try enter("v")
            let inner = try read(m)
            try exit()
            return inner
        case UInt8(ascii: "a"):
            if contents == "y" {
                var p: UnsafeRawPointer?
                var size = 0
                let r = sd_bus_message_read_array(m, code("y"), &p, &size)
                guard r >= 0 else { throw failure(r, "read array") }
                guard let p, size > 0 else { return .bytes([]) }
                return .bytes(Array(UnsafeRawBufferPointer(start: p, count: size)))
            }
            try enter("a")
            var items: [DBusValue] = []
            while sd_bus_message_at_end(m, 0) == 0 { items.append(try read(m)) }
            try exit()
            if contents.hasPrefix("{") {
                return .dict(items.compactMap { item in
                    guard case .structure(let kv) = item, kv.count == 2 else { return nil }
                    return DBusEntry(kv[0], kv[1])
                })
            }
            return .array(items)
        case UInt8(ascii: "r"), UInt8(ascii: "e"):
            try enter(Character(UnicodeScalar(UInt8(bitPattern: type))))
            var items: [DBusValue] = []
            while sd_bus_message_at_end(m, 0) == 0 { items.append(try read(m)) }
            try exit()
            return .structure(items)
        default:
            throw DBusError(name: "read message", message: "unsupported type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))'")
        }
    }

    /// The signature `append` writes for a value (a `.dict` is `a{sv}`).
    static func signature(_ value: DBusValue) -> String {
        switch value {
        case .bool: "b"
        case .byte: "y"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .fd: "h"
        case .bytes: "ay"
        case .array(let items): "a" + (items.first.map(signature) ?? "s")
        case .dict: "a{sv}"
        case .structure(let items): "(" + items.map(signature).joined() + ")"
        }
    }

    /// Appends a value; a `.dict` becomes `a{sv}` (string keys, values in variants), as BlueZ's
    /// option arguments are.
    static func append(_ value: DBusValue, to m: OpaquePointer) throws(DBusError) {
        func check(_ r: Int32) throws(DBusError) { if r < 0 { throw failure(r, "append") } }
        func basic<T: BitwiseCopyable>(_ t: Character, _ v: T) throws(DBusError) {
            var v = v
            try check(sd_bus_message_append_basic(m, code(t), &v))
        }
        switch value {
        case .bool(let b): try basic("b", Int32(b ? 1 : 0))
        case .byte(let v): try basic("y", v)
        case .int16(let v): try basic("n", v)
        case .uint16(let v): try basic("q", v)
        case .int32(let v): try basic("i", v)
        case .uint32(let v): try basic("u", v)
        case .int64(let v): try basic("x", v)
        case .uint64(let v): try basic("t", v)
        case .double(let v): try basic("d", v)
        case .fd(let v): try basic("h", v)
        case .string(let s), .objectPath(let s), .signature(let s):
            let t: Character = if case .string = value { "s" } else if case .objectPath = value { "o" } else { "g" }
            try check(s.withCString { sd_bus_message_append_basic(m, code(t), $0) })
        case .bytes(let bytes):
            try check(sd_bus_message_open_container(m, code("a"), "y"))
            for b in bytes { try basic("y", b) }
            try check(sd_bus_message_close_container(m))
        case .array(let items):
            try check(sd_bus_message_open_container(m, code("a"), String(signature(value).dropFirst())))
            for item in items { try append(item, to: m) }
            try check(sd_bus_message_close_container(m))
        case .dict(let entries):
            try check(sd_bus_message_open_container(m, code("a"), "{sv}"))
            for e in entries {
                try check(sd_bus_message_open_container(m, code("e"), "sv"))
                try append(.string(e.key.string ?? ""), to: m)
                try check(sd_bus_message_open_container(m, code("v"), signature(e.value)))
                try append(e.value, to: m)
                try check(sd_bus_message_close_container(m))
                try check(sd_bus_message_close_container(m))
            }
            try check(sd_bus_message_close_container(m))
        case .structure(let items):
            try check(sd_bus_message_open_container(m, code("r"), items.map(signature).joined()))
            for item in items { try append(item, to: m) }
            try check(sd_bus_message_close_container(m))
        }
    }
}
