/// A thread the pool watcher listed that is not named like a libdispatch worker, or not yet.
///
/// A new worker carries its creator's name until it names itself after its root queue, and a
/// worker is created when the pool is given work: the very first job of a process lands on a
/// thread that the scan after the enqueue may list under its creator's name (under load, the new
/// thread waits for a core before it runs a line). Read again only 16 scans later, while the known
/// workers all waited for work and the pool rested, such a thread ran its first job unwatched: a
/// 1.5 s stall went unreported. So a thread is young for ``youngScans`` scans after its first
/// listing: its name is read at each of them, and the pool is not quiet meanwhile (it does not
/// rest). After that its name is read ever more rarely (16, 32, … scans, up to a limit): with 64
/// loop threads, reading each every 16 scans was four name reads in every scan.
struct PoolOtherThread {
    /// Scans after its first listing during which a thread may still name itself a worker.
    static let youngScans = 8
    /// The longest wait between two reads of an old thread's name, in scans.
    static let retryLimit = 1024

    /// The scan at which its name is read again.
    private(set) var retry: Int
    /// The scans waited before that read.
    private(set) var wait: Int
    /// The last scan that listed it (one that did not has seen it exit).
    var seen: Int
    /// The scan that first listed it.
    let firstListed: Int
    /// An instant it did not exist yet, if known: the scan before its first listing, when that scan
    /// did not list it (or the end of the rest it was born in).
    let bornAfter: MonotonicInstant?

    /// Listed for the first time by scan `scan`, not named like a worker.
    init(firstListedBy scan: Int, bornAfter: MonotonicInstant?) {
        firstListed = scan
        seen = scan
        wait = 1
        retry = scan + 1
        self.bornAfter = bornAfter
    }

    /// Named like a worker but found not to be one: read again only as rarely as any old thread.
    init(notAWorkerAt scan: Int) {
        firstListed = scan - Self.youngScans
        seen = scan
        wait = Self.retryLimit
        retry = scan + Self.retryLimit
        bornAfter = nil
    }

    /// Whether it may still name itself a worker (see ``youngScans``).
    func isYoung(at scan: Int) -> Bool { scan - firstListed < Self.youngScans }

    /// Its name was read at `scan` and was not a worker's.
    mutating func stillOther(at scan: Int) {
        seen = scan
        if !isYoung(at: scan) { wait = wait < 16 ? 16 : min(wait * 2, Self.retryLimit) }
        retry = scan + wait
    }
}
