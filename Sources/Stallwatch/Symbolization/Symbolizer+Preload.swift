import Foundation

extension Symbolizer {
    /// Reads the executable's and the runtime libraries' symbols on a thread of its own, not on a
    /// Dispatch root queue: those threads are the pool's, and the read takes 0.5 s and more under
    /// ASan, which the pool watcher would rightly report as a stalled job.
    func preloadInBackground() {
        let thread = Thread { [self] in
            preloadMainExecutable()
            preloadRuntimeLibraries()
        }
        thread.name = "sw-symbols"
        thread.start()
    }
}
