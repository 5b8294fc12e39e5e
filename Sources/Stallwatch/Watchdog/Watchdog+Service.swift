import ServiceLifecycle

extension Watchdog: Service {
    /// Runs the watchdog for the life of a `ServiceGroup`: starts it, waits for graceful shutdown
    /// (or cancellation), then stops it and joins its thread.
    public func run() async throws {
        try start()
        defer { stop() }
        try? await gracefulShutdown()
    }
}
