import CSampler

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The threads of this process, as `/proc/self/task` lists them.
package enum ThreadList {
    /// Lists the ids of every thread of this process, in the kernel's order (ascending tid).
    /// Threads can start or exit while this runs; the result is a best-effort snapshot.
    /// - Throws: ``ThreadError`` when `/proc/self/task` cannot be read.
    package static func current() throws(ThreadError) -> [ThreadID] {
        var list: [ThreadID] = []
        try current(into: &list)
        return list
    }

    /// The same into `list`, whose storage is reused: no allocation once it has held as many
    /// threads as the process has (the watchdog lists threads every pool scan). `directory`, when
    /// given, is `/proc/self/task` kept open (``sw_task_dir_open``): listed again without opening it.
    /// - Throws: ``ThreadError`` when `/proc/self/task` cannot be read.
    package static func current(into list: inout [ThreadID], directory: Int32 = -1) throws(ThreadError) {
        for _ in 0..<8 {
            list.removeAll(keepingCapacity: true)
            let capacity = max(list.capacity, 64)
            var count = 0
            var rc: Int32 = 0
            // ThreadID is a wrapper of one Int32: the kernel's ids are written into the list's storage.
            list.reserveCapacity(capacity)
            let room = list.capacity
            list.append(contentsOf: repeatElement(ThreadID(rawValue: 0), count: room))
            list.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: Int32.self) { raw in
                    rc = directory >= 0 ? sw_threads_list_fd(directory, raw.baseAddress, raw.count, &count)
                                        : sw_threads_list(raw.baseAddress, raw.count, &count)
                }
            }
            guard rc == 0 else {
                list.removeAll(keepingCapacity: true)
                throw ThreadError(code: rc, operation: "listing /proc/self/task")
            }
            if count <= room {
                list.removeLast(room - count)
                return
            }
            list.removeAll(keepingCapacity: true)
            list.reserveCapacity(count + count / 4 + 16)
        }
        throw ThreadError.system(operation: "listing /proc/self/task (thread count kept growing)", errno: EAGAIN)
    }

    /// How many threads this process has now.
    /// - Throws: ``ThreadError`` when `/proc/self/task` cannot be read.
    package static func count() throws(ThreadError) -> Int {
        try count(directory: -1)
    }

    /// The same through `directory`, as in ``current(into:directory:)``.
    package static func count(directory: Int32) throws(ThreadError) -> Int {
        var count = 0
        let rc = directory >= 0 ? sw_threads_list_fd(directory, nil, 0, &count) : sw_threads_list(nil, 0, &count)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "listing /proc/self/task") }
        return count
    }
}

/// `/proc/self/task` kept open, for listings every watchdog round (an open and a close saved each
/// time; ``ThreadList`` lists it again from its start). Listed by path when it cannot be opened.
package final class TaskDirectory {
    /// The descriptor, or a negative errno when it could not be opened.
    package let descriptor: Int32

    /// Opens `/proc/self/task`; closed when this is released.
    package init() { descriptor = sw_task_dir_open() }

    deinit { if descriptor >= 0 { close(descriptor) } }
}
