import StallwatchReport
/// How the watchdog tells an event loop that reports its own ticks (SwiftNIO's metrics delegate)
/// idle from stalled without pinging it: a ping would wake an idle loop out of `epoll_wait` 25
/// times a second, just to learn that it was asleep.
///
/// A loop whose last tick ended after the previous look is making progress. One with no tick end
/// since then is either asleep waiting for I/O (its thread blocked in `epoll_wait`: SwiftNIO runs a
/// tick after every wake-up, so a thread back there finished its work) or inside work that began
/// after its last tick ended (a long tick, or a channel handler running between ticks): running, or
/// blocked in any other system call. Only then is it "busy since about now", and its next tick end
/// closes that busy period.
package enum LoopLookPolicy {
    /// What the watchdog read about the loop's thread.
    package enum ThreadState: Equatable, Sendable {
        /// Its CPU clock has not moved since a look saw it asleep: it cannot have moved either.
        case unmovedSinceAsleep
        /// Blocked in this system call (`/proc/self/task/TID/syscall`).
        case inSyscall(Int64)
        /// On a CPU or runnable.
        case running
        /// Blocked outside a system call (a page fault).
        case blockedOutsideSyscall
        /// The thread is gone (the loop was shut down) or could not be read.
        case unreadable
    }

    /// The look's conclusion.
    package enum Verdict: Equatable, Sendable {
        /// A tick ended since the last look: progress.
        case ticking
        /// Waiting for I/O in `epoll_wait`: idle.
        case asleep
        /// In work that began after its last tick ended: watched as a busy period from now on.
        case busy
        /// Nothing can be said (the thread is gone): no busy period is started.
        case unknown
    }

    /// The system calls a SwiftNIO event loop sleeps in.
    package static let epollWaits: Set<Int64> = {
        #if arch(x86_64)
        return [232, 281, 441]   // epoll_wait, epoll_pwait, epoll_pwait2
        #elseif arch(arm64)
        return [22, 441]         // epoll_pwait, epoll_pwait2 (arm64 has no epoll_wait)
        #else
        return []
        #endif
    }()

    /// The verdict of one look. `thread` is read only when no tick ended (`nil` otherwise).
    package static func judge(tickEnded: Bool, thread: ThreadState?) -> Verdict {
        if tickEnded { return .ticking }
        switch thread {
        case .unmovedSinceAsleep?: return .asleep
        case .inSyscall(let nr)? where epollWaits.contains(nr): return .asleep
        case .inSyscall?, .running?, .blockedOutsideSyscall?: return .busy
        case .unreadable?, nil: return .unknown
        }
    }
}
