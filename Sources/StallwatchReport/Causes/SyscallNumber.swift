/// Linux system call numbers the classifier understands, for the architecture this is built for:
/// x86_64 from the kernel's `arch/x86/entry/syscalls/syscall_64.tbl`, arm64 from the generic table
/// (`include/uapi/asm-generic/unistd.h`). The numbers differ (202 is `futex` on x86_64 and `accept`
/// on arm64), so they come from one table per architecture below. arm64 never had the old calls
/// `poll`, `select` and `epoll_wait` (its libc uses `ppoll`, `pselect6` and `epoll_pwait`): there
/// they are ``unavailable``.
package enum SyscallNumber {
    /// The number of a call this architecture does not have: no thread is ever blocked in it.
    package static let unavailable = Int.min

    /// `read`.
    package static let read = Table.read
    /// `write`.
    package static let write = Table.write
    /// `poll`.
    package static let poll = Table.poll
    /// `pread64`.
    package static let pread64 = Table.pread64
    /// `pwrite64`.
    package static let pwrite64 = Table.pwrite64
    /// `readv`.
    package static let readv = Table.readv
    /// `writev`.
    package static let writev = Table.writev
    /// `select`.
    package static let select = Table.select
    /// `nanosleep`.
    package static let nanosleep = Table.nanosleep
    /// `connect`.
    package static let connect = Table.connect
    /// `accept`.
    package static let accept = Table.accept
    /// `sendto`.
    package static let sendto = Table.sendto
    /// `recvfrom`.
    package static let recvfrom = Table.recvfrom
    /// `sendmsg`.
    package static let sendmsg = Table.sendmsg
    /// `recvmsg`.
    package static let recvmsg = Table.recvmsg
    /// `fsync`.
    package static let fsync = Table.fsync
    /// `fdatasync`.
    package static let fdatasync = Table.fdatasync
    /// `futex`.
    package static let futex = Table.futex
    /// `clock_nanosleep`.
    package static let clockNanosleep = Table.clockNanosleep
    /// `epoll_wait`.
    package static let epollWait = Table.epollWait
    /// `openat`.
    package static let openat = Table.openat
    /// `pselect6`.
    package static let pselect6 = Table.pselect6
    /// `ppoll`.
    package static let ppoll = Table.ppoll
    /// `epoll_pwait`.
    package static let epollPwait = Table.epollPwait
    /// `accept4`.
    package static let accept4 = Table.accept4
    /// `epoll_pwait2`.
    package static let epollPwait2 = Table.epollPwait2

    /// The name of a known syscall number, for evidence text; `nil` for numbers not listed here.
    package static func name(of number: Int) -> String? {
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
    package static let readinessWaits: Set<Int> = [poll, select, epollWait, pselect6, ppoll, epollPwait, epollPwait2]
    /// Calls that only ever involve sockets.
    package static let socketOnly: Set<Int> = [connect, accept, accept4, sendto, recvfrom, sendmsg, recvmsg]
    /// Data transfer on a descriptor of any kind; the descriptor's kind decides the cause.
    package static let transfer: Set<Int> = [read, write, pread64, pwrite64, readv, writev, recvfrom, recvmsg, sendto, sendmsg]
    /// Calls that wait for storage whatever the descriptor.
    package static let storageOnly: Set<Int> = [fsync, fdatasync, openat]
    /// Sleeps.
    package static let sleeps: Set<Int> = [nanosleep, clockNanosleep]
}

// One table per architecture; a build for any other fails here rather than classifying with
// another architecture's numbers.
#if arch(x86_64)
private enum Table {
    package static let read = 0
    package static let write = 1
    package static let poll = 7
    package static let pread64 = 17
    package static let pwrite64 = 18
    package static let readv = 19
    package static let writev = 20
    package static let select = 23
    package static let nanosleep = 35
    package static let connect = 42
    package static let accept = 43
    package static let sendto = 44
    package static let recvfrom = 45
    package static let sendmsg = 46
    package static let recvmsg = 47
    package static let fsync = 74
    package static let fdatasync = 75
    package static let futex = 202
    package static let clockNanosleep = 230
    package static let epollWait = 232
    package static let openat = 257
    package static let pselect6 = 270
    package static let ppoll = 271
    package static let epollPwait = 281
    package static let accept4 = 288
    package static let epollPwait2 = 441
}
#elseif arch(arm64)
private enum Table {
    package static let read = 63
    package static let write = 64
    package static let poll = SyscallNumber.unavailable
    package static let pread64 = 67
    package static let pwrite64 = 68
    package static let readv = 65
    package static let writev = 66
    package static let select = SyscallNumber.unavailable
    package static let nanosleep = 101
    package static let connect = 203
    package static let accept = 202
    package static let sendto = 206
    package static let recvfrom = 207
    package static let sendmsg = 211
    package static let recvmsg = 212
    package static let fsync = 82
    package static let fdatasync = 83
    package static let futex = 98
    package static let clockNanosleep = 115
    package static let epollWait = SyscallNumber.unavailable
    package static let openat = 56
    package static let pselect6 = 72
    package static let ppoll = 73
    package static let epollPwait = 22
    package static let accept4 = 242
    package static let epollPwait2 = 441
}
#else
#error("SyscallNumber has tables for x86_64 and arm64 Linux only")
#endif
