#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchReport

/// The process's threads, listed again only when they may have changed. A listing of
/// `/proc/self/task` looks up every entry (under `wrk`, the pool scan's listing every 40 ms was 8 %
/// of the watchdog thread's CPU); the directory's link count is the thread count plus two, one
/// `fstat`. So the list is read again when that count changed, or once it is ``maximumAge`` old:
/// a thread that exits while another is born leaves the count as it was. Used by one thread.
package final class ThreadRoster {
    /// The thread ids of the last listing, in the kernel's order.
    package private(set) var threads: [ThreadID] = []
    /// When the last listing was read (`nil` before the first).
    package private(set) var listedAt: MonotonicInstant?
    /// The longest a listing is kept while the thread count stays the same.
    package let maximumAge: Duration
    /// Why the last refresh could not list the threads (`nil` once one could): its users say it
    /// in a report or an `error` event rather than watching a list that stopped changing.
    package private(set) var lastError: ThreadError?
    private var listedCount = -1
    private let directory: TaskDirectory
    private let list: Lister

    /// Fills its argument with the process's thread ids.
    package typealias Lister = (inout [ThreadID]) throws(ThreadError) -> Void

    /// A roster that lists again at least every `maximumAge`, by `list` (tests give one that
    /// fails); `/proc/self/task` through one descriptor kept open when it is `nil`.
    package init(maximumAge: Duration = .milliseconds(500), list: Lister? = nil) {
        self.maximumAge = maximumAge
        let directory = TaskDirectory()
        self.directory = directory
        if let list {
            self.list = list
        } else {
            self.list = { (threads: inout [ThreadID]) throws(ThreadError) in
                try ThreadList.current(into: &threads, directory: directory.descriptor)
            }
        }
    }

    /// Brings ``threads`` up to date; returns whether the directory was listed again.
    /// - Throws: ``ThreadError`` when `/proc/self/task` cannot be listed.
    @discardableResult
    package func refresh(now: MonotonicInstant) throws(ThreadError) -> Bool {
        let count = linkedThreadCount()
        if let count, count == listedCount, let at = listedAt, now - at < maximumAge { return false }
        // The count is read first: a thread born or gone during the listing makes the next count
        // differ, and the list is read again then.
        do {
            try list(&threads)
        } catch {
            lastError = error
            throw error
        }
        lastError = nil
        listedAt = now
        listedCount = count ?? -1
        return true
    }

    /// The thread count from the directory's link count, or `nil` where it cannot be read.
    private func linkedThreadCount() -> Int? {
        guard directory.descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(directory.descriptor, &info) == 0, info.st_nlink >= 2 else { return nil }
        return Int(info.st_nlink) - 2
    }
}
