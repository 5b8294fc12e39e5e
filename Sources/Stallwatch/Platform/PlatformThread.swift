#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Threads of the platform's own, started on a closure. `pthread_create` differs in its types:
/// glibc and musl give an integer `pthread_t` and pass the start routine an optional argument,
/// Darwin a pointer and a non-optional one. Callers keep the `pthread_t` and join or detach it.
package enum PlatformThread {
    /// Why a thread could not be started: the error number `pthread_create` returned.
    package struct StartFailure: Error, Sendable {
        /// The error number (`EAGAIN`: no resources or too many threads).
        package let code: Int32
    }

    /// Starts `body` on a new joinable thread and returns it.
    package static func start(_ body: @escaping @Sendable () -> Void) throws(StartFailure) -> pthread_t {
        let box = Unmanaged.passRetained(Body(body))
#if canImport(Darwin)
        var thread: pthread_t?
        let rc = pthread_create(&thread, nil, { arg in
            Unmanaged<Body>.fromOpaque(arg).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard rc == 0, let thread else {
            box.release()
            throw StartFailure(code: rc == 0 ? EAGAIN : rc)
        }
        return thread
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
        return thread
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
