import Dispatch
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Closes `channel` on SIGTERM or SIGINT. Outside top-level code on purpose: a closure written there
/// would belong to the main actor, and the signal source runs it on another queue.
func closeOnTermination(_ channel: any Channel) -> [any DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { signo in
        signal(signo, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
        source.setEventHandler { channel.close(promise: nil) }
        source.resume()
        return source
    }
}
