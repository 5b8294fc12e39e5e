import CSampler

/// How a stack was (or is to be) walked.
package enum Unwinder: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Frame-pointer walk inside the signal handler, every link checked against the thread's stack
    /// bounds. About a nanosecond a frame; complete through Swift code and the Swift runtime, stops at
    /// the first function built without frame pointers (glibc, ld.so).
    case framePointer
    /// libunwind (DWARF call-frame information), run *outside* the handler on the registers and a
    /// stack copy the handler took. Complete through code without frame pointers; costs a stack copy
    /// in the target and microseconds a frame in the caller. Never takes the dynamic loader's lock.
    case libunwind
    /// No signal at all: a checked scan for frame records from the stack pointer and program
    /// counter the kernel reports for a thread blocked in a system call.
    case syscallScan

    package var description: String { rawValue }

    init?(c: UInt8) {
        switch Int(c) {
        case Int(SW_UNWIND_FRAME_POINTER.rawValue): self = .framePointer
        case Int(SW_UNWIND_LIBUNWIND.rawValue): self = .libunwind
        case Int(SW_UNWIND_SYSCALL_SCAN.rawValue): self = .syscallScan
        default: return nil
        }
    }

    var cValue: sw_unwinder_t {
        switch self {
        case .framePointer: SW_UNWIND_FRAME_POINTER
        case .libunwind: SW_UNWIND_LIBUNWIND
        case .syscallScan: SW_UNWIND_SYSCALL_SCAN
        }
    }
}
