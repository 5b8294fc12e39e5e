import CSampler

extension Symbolizer {
    /// Reads the executable's and the runtime libraries' symbols on a thread of its own, not on a
    /// Dispatch root queue: those threads are the pool's, and the read takes 0.5 s and more under
    /// ASan, which the pool watcher would rightly report as a stalled job. The thread gets its own
    /// kernel name: one created by a pool worker would otherwise keep the worker's `…-qos` name.
    /// Throws when no thread could be started (symbols are then read when first needed).
    func preloadInBackground() throws(PlatformThread.StartFailure) {
        let thread = try PlatformThread.start { [self] in
            _ = sw_thread_set_name("sw-symbols")
            preloadMainExecutable()
            preloadRuntimeLibraries()
        }
        thread.detach()
    }
}
