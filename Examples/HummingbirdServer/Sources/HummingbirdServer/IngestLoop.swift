import Stallwatch

/// A loop the service owns: it drains a queue of jobs and tells the watchdog when it is busy.
/// busy()/idle() cost about 11 ns a pair: no lock, no allocation.
func runIngestLoop(_ jobs: AsyncStream<@Sendable () -> Void>, watchdog: Watchdog) async {
    let probe = watchdog.makeProbe(name: "ingest-loop")
    for await job in jobs {
        probe.busy()
        job()
        probe.idle()
    }
}
