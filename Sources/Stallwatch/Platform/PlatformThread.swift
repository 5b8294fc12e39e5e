#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Threads of the platform's own, started on a closure. `pthread_create` differs in its types:
/// glibc gives an integer `pthread_t` and passes the start routine an optional argument, Darwin a
/// pointer (not `Sendable`) and a non-optional one. Callers keep the ``Handle`` and join or detach
/// the thread through it.
package enum PlatformThread {
    /// A started thread, joined or detached once by whoever started it. Only a name for the
    /// thread, never dereferenced: sendable wherever `pthread_t` is a pointer too.
    package struct Handle: @unchecked Sendable {
        fileprivate let thread: pthread_t

        /// Whether the calling thread is this one.
        package var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

        /// Waits for the thread to end.
        package func join() { pthread_join(thread, nil) }

        /// Lets the thread end on its own; it is not joined.
        package func detach() { pthread_detach(thread) }
    }

    /// Why a thread could not be started: the error number `pthread_create` returned.
    package struct StartFailure: Error, Sendable {
        /// The error number (`EAGAIN`: no resources or too many threads).
        package let code: Int32
    }

    /// Starts `body` on a new joinable thread and returns it.
    package static func start(_ body: @escaping @Sendable () -> Void) throws(StartFailure) -> Handle {
        let box = Unmanaged.passRetained(Body(body))
#if canImport(Darwin)
        var thread: pthread_t?
        let rc = pthread_create(&thread, nil, { arg in
            Unmanaged<Body>.fromOpaque(arg).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            throw StartFailure(code: rc)
        }
        // Never nil once pthread_create succeeded; the running thread owns the box, so it is not
        // released here.
        guard let thread else { throw StartFailure(code: EINVAL) }
        return Handle(thread: thread)
#else
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { arg in
            guard let arg else { return nil }
            Unmanaged<Body>.fromOpaque(arg).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            throw StartFailure(code: rc)
        }
        return Handle(thread: thread)
#endif
    }

    /// The calling thread's `pthread_t` as a number (what C code compares `pthread_self()` with).
    package static var currentHandle: UInt64 {
#if canImport(Darwin)
        UInt64(UInt(bitPattern: pthread_self()))
#else
        UInt64(pthread_self())
#endif
    }

    /// The closure a new thread runs, carried through `pthread_create`'s one pointer.
    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
