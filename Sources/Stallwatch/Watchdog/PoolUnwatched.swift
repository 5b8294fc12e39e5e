/// A pool worker away from its wait for work whose job the scans cannot tell: its stack ends before
/// the job runner (code the walk cannot cross), or cannot be captured at all. A stall of such a job
/// is neither dated nor reported, so the watchdog says so in an `error` event rather than staying
/// silent: once the worker has been so for the threshold (a job there would have been reported by
/// then), and once per stretch (a job told, or the worker back in its wait, starts it anew).
struct PoolUnwatched {
    /// The first scan of this stretch that could not tell the job.
    private var since: MonotonicInstant?
    /// Why, as the newest such scan saw it.
    private var why = ""
    private var said = false

    /// A scan found the worker away and could not tell its job, because of `why`.
    mutating func failed(now: MonotonicInstant, why: String) {
        if since == nil { since = now }
        self.why = why
    }

    /// The reason to say now, once per stretch, when it has lasted `after`.
    mutating func due(now: MonotonicInstant, after: Duration) -> String? {
        guard !said, let since, now - since >= after else { return nil }
        said = true
        return why
    }
}
