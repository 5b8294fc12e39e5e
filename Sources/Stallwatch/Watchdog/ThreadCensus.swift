import CSampler
import StallwatchReport

/// The process's thread count and runnable threads, read at most once per ``freshness``: every
/// stalled loop's evidence needs the count, and a starved one the runnable threads. Read per loop,
/// 64 loops stalled at once meant 64 listings and 64 × 70 `/proc` stat reads a round — 40 % of the
/// watchdog's CPU in `bench detect`'s 64 spinning loops, on a watchdog that gets a few per cent of
/// a core there. The runnable threads are kept for ``freshness`` across rounds too: in a
/// storm the watchdog wakes at every loop's threshold, rounds a few ms apart, and re-reading every
/// thread's stat each time was the largest per-round cost left.
struct ThreadCensus {
    /// How long a reading of the thread count or the runnable threads stands (evidence of too many
    /// threads or a starved CPU, which does not come and go within a tenth of a second).
    static let freshness = Duration.milliseconds(100)

    private var count: Int?
    private var countAt: MonotonicInstant?
    private var runnable: Int??
    private var runnableAt: MonotonicInstant?
    /// Storage for listing the threads, kept from round to round (no allocation per round).
    private var tids: [ThreadID] = []
    private let directory = TaskDirectory()

    /// Threads of this process (0 when they cannot be listed), listed at most once per
    /// ``freshness`` (evidence of too many threads, which does not change within it either).
    mutating func threadCount(round now: MonotonicInstant) -> Int {
        if let count, let at = countAt, now - at < Self.freshness { return count }
        let listed = (try? ThreadList.count(directory: directory.descriptor)) ?? 0
        count = listed
        countAt = now
        return listed
    }

    /// Threads of this process in state R, `nil` when they cannot be read.
    mutating func runnableThreads(round now: MonotonicInstant) -> Int? {
        if let runnable, let at = runnableAt, now - at < Self.freshness { return runnable }
        let read = readRunnable()
        runnable = .some(read)
        runnableAt = now
        return read
    }

    private mutating func readRunnable() -> Int? {
        do { try ThreadList.current(into: &tids, directory: directory.descriptor) } catch { return nil }
        var stat = sw_thread_stat_t()
        return tids.reduce(0) { count, tid in
            sw_thread_stat(tid.rawValue, &stat) == 0 && stat.state == CChar(UInt8(ascii: "R")) ? count + 1 : count
        }
    }
}
