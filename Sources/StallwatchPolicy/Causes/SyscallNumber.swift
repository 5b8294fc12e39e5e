/// Linux system call numbers the classifier understands, for the architecture this is built for:
/// x86_64 from the kernel's `arch/x86/entry/syscalls/syscall_64.tbl`, arm64 from the generic table
/// (`include/uapi/asm-generic/unistd.h`). The numbers differ (202 is `futex` on x86_64 and `accept`
/// on arm64), so they come from one table per architecture below. arm64 never had the old calls
/// `poll`, `select` and `epoll_wait` (its libc uses `ppoll`, `pselect6` and `epoll_pwait`): there
/// they are ``unavailable``.
public enum SyscallNumber {
    /// The number of a call this architecture does not have: no thread is ever blocked in it.
    public static let unavailable = Int.min

    /// `read`.
    public static let read = Table.read
    /// `write`.
    public static let write = Table.write
    /// `poll`.
    public static let poll = Table.poll
    /// `pread64`.
    public static let pread64 = Table.pread64
    /// `pwrite64`.
    public static let pwrite64 = Table.pwrite64
    /// `readv`.
    public static let readv = Table.readv
    /// `writev`.
    public static let writev = Table.writev
    /// `select`.
    public static let select = Table.select
    /// `nanosleep`.
    public static let nanosleep = Table.nanosleep
    /// `connect`.
    public static let connect = Table.connect
    /// `accept`.
    public static let accept = Table.accept
    /// `sendto`.
    public static let sendto = Table.sendto
    /// `recvfrom`.
    public static let recvfrom = Table.recvfrom
    /// `sendmsg`.
    public static let sendmsg = Table.sendmsg
    /// `recvmsg`.
    public static let recvmsg = Table.recvmsg
    /// `fsync`.
    public static let fsync = Table.fsync
    /// `fdatasync`.
    public static let fdatasync = Table.fdatasync
    /// `futex`.
    public static let futex = Table.futex
    /// `clock_nanosleep`.
    public static let clockNanosleep = Table.clockNanosleep
    /// `epoll_wait`.
    public static let epollWait = Table.epollWait
    /// `openat`.
    public static let openat = Table.openat
    /// `pselect6`.
    public static let pselect6 = Table.pselect6
    /// `ppoll`.
    public static let ppoll = Table.ppoll
    /// `epoll_pwait`.
    public static let epollPwait = Table.epollPwait
    /// `accept4`.
    public static let accept4 = Table.accept4
    /// `epoll_pwait2`.
    public static let epollPwait2 = Table.epollPwait2

    /// The name of a known syscall number, for evidence text; `nil` for numbers not listed here.
    public static func name(of number: Int) -> String? {
        names[number]
    }

    // Calls the architecture lacks are left out: they all share one number that is never reported
    // (pairs, not a dictionary literal, which would trap on that repeated key).
    private static let names: [Int: String] = Dictionary(
        uniqueKeysWithValues: [
            (read, "read"), (write, "write"), (poll, "poll"), (pread64, "pread64"), (pwrite64, "pwrite64"),
            (readv, "readv"), (writev, "writev"), (select, "select"), (nanosleep, "nanosleep"),
            (connect, "connect"), (accept, "accept"), (sendto, "sendto"), (recvfrom, "recvfrom"),
            (sendmsg, "sendmsg"), (recvmsg, "recvmsg"), (fsync, "fsync"), (fdatasync, "fdatasync"),
            (futex, "futex"), (clockNanosleep, "clock_nanosleep"), (epollWait, "epoll_wait"),
            (openat, "openat"), (pselect6, "pselect6"), (ppoll, "ppoll"), (epollPwait, "epoll_pwait"),
            (accept4, "accept4"), (epollPwait2, "epoll_pwait2"),
        ].filter { $0.0 != unavailable })

    /// Waits for readiness on many descriptors: in a server, that is waiting for the network.
    static let readinessWaits: Set<Int> = [poll, select, epollWait, pselect6, ppoll, epollPwait, epollPwait2]
    /// Calls that only ever involve sockets.
    static let socketOnly: Set<Int> = [connect, accept, accept4, sendto, recvfrom, sendmsg, recvmsg]
    /// Data transfer on a descriptor of any kind; the descriptor's kind decides the cause.
    static let transfer: Set<Int> = [read, write, pread64, pwrite64, readv, writev, recvfrom, recvmsg, sendto, sendmsg]
    /// Calls that wait for storage whatever the descriptor.
    static let storageOnly: Set<Int> = [fsync, fdatasync, openat]
    /// Sleeps.
    static let sleeps: Set<Int> = [nanosleep, clockNanosleep]
}

// One table per architecture; a build for any other fails here rather than classifying with
// another architecture's numbers.
#if arch(x86_64)
private enum Table {
    static let read = 0
    static let write = 1
    static let poll = 7
    static let pread64 = 17
    static let pwrite64 = 18
    static let readv = 19
    static let writev = 20
    static let select = 23
    static let nanosleep = 35
    static let connect = 42
    static let accept = 43
    static let sendto = 44
    static let recvfrom = 45
    static let sendmsg = 46
    static let recvmsg = 47
    static let fsync = 74
    static let fdatasync = 75
    static let futex = 202
    static let clockNanosleep = 230
    static let epollWait = 232
    static let openat = 257
    static let pselect6 = 270
    static let ppoll = 271
    static let epollPwait = 281
    static let accept4 = 288
    static let epollPwait2 = 441
}
#elseif arch(arm64)
private enum Table {
    static let read = 63
    static let write = 64
    static let poll = SyscallNumber.unavailable
    static let pread64 = 67
    static let pwrite64 = 68
    static let readv = 65
    static let writev = 66
    static let select = SyscallNumber.unavailable
    static let nanosleep = 101
    static let connect = 203
    static let accept = 202
    static let sendto = 206
    static let recvfrom = 207
    static let sendmsg = 211
    static let recvmsg = 212
    static let fsync = 82
    static let fdatasync = 83
    static let futex = 98
    static let clockNanosleep = 115
    static let epollWait = SyscallNumber.unavailable
    static let openat = 56
    static let pselect6 = 72
    static let ppoll = 73
    static let epollPwait = 22
    static let accept4 = 242
    static let epollPwait2 = 441
}
#else
#error("SyscallNumber has tables for x86_64 and arm64 Linux only")
#endif
