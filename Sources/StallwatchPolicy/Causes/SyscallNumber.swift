/// x86_64 Linux system call numbers the classifier understands (from the kernel's
/// `arch/x86/entry/syscalls/syscall_64.tbl`).
public enum SyscallNumber {
    /// `read`.
    public static let read = 0
    /// `write`.
    public static let write = 1
    /// `poll`.
    public static let poll = 7
    /// `pread64`.
    public static let pread64 = 17
    /// `pwrite64`.
    public static let pwrite64 = 18
    /// `readv`.
    public static let readv = 19
    /// `writev`.
    public static let writev = 20
    /// `select`.
    public static let select = 23
    /// `nanosleep`.
    public static let nanosleep = 35
    /// `connect`.
    public static let connect = 42
    /// `accept`.
    public static let accept = 43
    /// `sendto`.
    public static let sendto = 44
    /// `recvfrom`.
    public static let recvfrom = 45
    /// `sendmsg`.
    public static let sendmsg = 46
    /// `recvmsg`.
    public static let recvmsg = 47
    /// `fsync`.
    public static let fsync = 74
    /// `fdatasync`.
    public static let fdatasync = 75
    /// `futex`.
    public static let futex = 202
    /// `clock_nanosleep`.
    public static let clockNanosleep = 230
    /// `epoll_wait`.
    public static let epollWait = 232
    /// `openat`.
    public static let openat = 257
    /// `pselect6`.
    public static let pselect6 = 270
    /// `ppoll`.
    public static let ppoll = 271
    /// `epoll_pwait`.
    public static let epollPwait = 281
    /// `accept4`.
    public static let accept4 = 288
    /// `epoll_pwait2`.
    public static let epollPwait2 = 441

    /// The name of a known syscall number, for evidence text; `nil` for numbers not listed here.
    public static func name(of number: Int) -> String? {
        names[number]
    }

    private static let names: [Int: String] = [
        read: "read", write: "write", poll: "poll", pread64: "pread64", pwrite64: "pwrite64",
        readv: "readv", writev: "writev", select: "select", nanosleep: "nanosleep",
        connect: "connect", accept: "accept", sendto: "sendto", recvfrom: "recvfrom",
        sendmsg: "sendmsg", recvmsg: "recvmsg", fsync: "fsync", fdatasync: "fdatasync",
        futex: "futex", clockNanosleep: "clock_nanosleep", epollWait: "epoll_wait",
        openat: "openat", pselect6: "pselect6", ppoll: "ppoll", epollPwait: "epoll_pwait",
        accept4: "accept4", epollPwait2: "epoll_pwait2",
    ]

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
