import CSampler

/// Whether this build samples stacks. The C core answers (its portable header, `sw_platform.h`):
/// on Linux it captures stacks and reads thread facts; on other platforms, and in Linux builds
/// with `STALLWATCH_PORTABLE_ONLY`, every call of it says "not here", and a watchdog detects stalls
/// from its probes alone. The one place the engine asks.
package enum SamplingSupport {
    /// Whether stacks are sampled and thread facts read here.
    package static var isAvailable: Bool { sw_platform_samples() != 0 }

    /// What a watchdog goes without where ``isAvailable`` is false: its one error event and log
    /// line when it starts. The README and the documentation catalog quote it.
    package static let unavailableMessage = """
        stack sampling is not available on this platform (Stallwatch samples stacks on Linux only): \
        stalls of heartbeat and ping probes are still detected and reported with their start and \
        duration, without stacks, thread states or causes; Swift concurrency pool jobs are not \
        watched one by one
        """
}
