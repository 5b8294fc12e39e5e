import StallwatchReport
/// The kind of file a descriptor refers to (from `/proc/self/fd/<n>` or `fstat`).
package enum FDKind: String, Sendable, Codable, Equatable, CaseIterable {
    /// A socket of any family.
    case socket
    /// A pipe or FIFO.
    case pipe
    /// A regular file (or block device): storage.
    case file
    /// An `eventfd`.
    case eventfd
    /// An `epoll` instance.
    case epoll
    /// A `timerfd`.
    case timerfd
    /// Anything else (character device, `signalfd`, …).
    case other
}

/// How many tasks were runnable on the whole machine during a stall, and where the count came from.
package struct MachineRunnableCount: Sendable, Equatable {
    /// Tasks in state `R` (running or waiting for a CPU), the reader left out: at least 0.
    package var count: Int
    /// Where it was read and when, for the evidence: `/proc/loadavg at the stall's last round`.
    package var source: String

    /// Creates a count.
    package init(count: Int, source: String) {
        self.count = count
        self.source = source
    }
}

/// What the watchdog learned about the stalled thread without signalling it, over one
/// observation window (the deltas are since the stall's start or the previous round).
package struct ThreadEvidence: Sendable, Equatable {
    /// The `/proc/<tid>/stat` state letter: `R` running, `S` sleeping, `D` uninterruptible, ….
    package var state: Character
    /// The x86_64 syscall number the thread is blocked in, from `/proc/<tid>/syscall`; `nil`
    /// when it is running in user space or the number is unknown.
    package var syscall: Int?
    /// The kind of the syscall's descriptor argument, when it has one and it could be resolved.
    package var fdKind: FDKind?
    /// CPU time the thread used during the window.
    package var cpuTimeDelta: Duration
    /// Wall time of the window.
    package var wallDelta: Duration
    /// Time spent runnable but waiting for a CPU during the window (`schedstat`), if known.
    package var runQueueWaitDelta: Duration?
    /// Threads in the process.
    package var threadCount: Int
    /// Threads of the process in state `R` (running or waiting for a CPU) at the stall, when
    /// counted: only for a thread that looks starved, where it decides "too many threads".
    package var runnableThreadCount: Int?
    /// Online CPU cores (0 when unknown).
    package var cores: Int
    /// Tasks of every process in state `R` on the machine, read during the stall (the watchdog
    /// thread that read it left out): what the stalled thread competes with for the cores. Read
    /// only for a thread that looks starved; `nil` when not read.
    package var machineRunnable: MachineRunnableCount?
    /// Why ``machineRunnable`` is `nil` when it was asked for and could not be read (the file and
    /// the error), said in the evidence.
    package var machineRunnableUnread: String?
    /// Time the process's cgroup was held off the CPUs by its CPU quota during the window (cgroup
    /// v2 `cpu.stat` `throttled_usec`); `nil` when not known (no quota file, cgroup v1, not read).
    package var throttledDelta: Duration?
    /// Bytes the thread made the kernel move to or from storage during the window (`read_bytes`
    /// plus `write_bytes` of its `/proc` `io` file); read only for a runnable thread, `nil` when
    /// not read.
    package var storageBytesDelta: UInt64?
    /// Why the storage bytes of a runnable thread could not be read (``storageBytesDelta`` then
    /// unknown): said in the evidence, as storage was not weighed.
    package var storageBytesUnread: String?

    /// Creates evidence.
    package init(
        state: Character, syscall: Int? = nil, fdKind: FDKind? = nil,
        cpuTimeDelta: Duration, wallDelta: Duration, runQueueWaitDelta: Duration? = nil,
        threadCount: Int, runnableThreadCount: Int? = nil, cores: Int = 0,
        machineRunnable: MachineRunnableCount? = nil, machineRunnableUnread: String? = nil,
        throttledDelta: Duration? = nil, storageBytesDelta: UInt64? = nil
    ) {
        self.state = state
        self.syscall = syscall
        self.fdKind = fdKind
        self.cpuTimeDelta = cpuTimeDelta
        self.wallDelta = wallDelta
        self.runQueueWaitDelta = runQueueWaitDelta
        self.threadCount = threadCount
        self.runnableThreadCount = runnableThreadCount
        self.cores = cores
        self.machineRunnable = machineRunnable
        self.machineRunnableUnread = machineRunnableUnread
        self.throttledDelta = throttledDelta
        self.storageBytesDelta = storageBytesDelta
    }

    /// Whether the thread looks starved: runnable, yet it got less than `cpuBoundFraction` of the
    /// wall time on a CPU. Only then is counting the process's runnable threads worth its cost.
    package func looksStarved(cpuBoundFraction: Double = 0.5) -> Bool {
        state == "R" && cpuFraction < cpuBoundFraction
    }

    /// CPU time as a fraction of wall time (0 when the window is empty).
    var cpuFraction: Double {
        wallDelta > .zero ? cpuTimeDelta / wallDelta : 0
    }

    /// Run-queue wait as a fraction of wall time, if known.
    var runQueueFraction: Double? {
        guard let wait = runQueueWaitDelta, wallDelta > .zero else { return nil }
        return wait / wallDelta
    }
}
