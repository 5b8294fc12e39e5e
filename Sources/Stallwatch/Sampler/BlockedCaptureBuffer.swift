import CSampler
import Synchronization

/// The one `sw_stack_t` that scans of blocked threads write into, kept for the sampler's life. The
/// structure is larger than `withUnsafeTemporaryAllocation` keeps on the stack, so a temporary one
/// went to the heap on every capture (the watchdog scans every blocked thread of a report,
/// and pool threads every round), and the scan's copy of the stack (64 KiB, touched only as far
/// as scans reach), which the C scan allocated on every call. A scan holds the lock: it reads
/// /proc and this process's own memory and never waits on another thread.
final class BlockedCaptureBuffer: Sendable {
    private struct Slot: ~Copyable {
        let stack: UnsafeMutablePointer<sw_stack_t>
        let scratch: UnsafeMutableRawPointer

        init() {
            stack = .allocate(capacity: 1)
            stack.initialize(to: sw_stack_t())
            scratch = .allocate(byteCount: Int(SW_BLOCKED_SCAN_BYTES), alignment: 8)
        }

        deinit {
            stack.deallocate()
            scratch.deallocate()
        }
    }

    private let slot = Mutex(Slot())

    /// Runs `body` with the buffer and the scan's scratch (``scratchBytes`` long), alone.
    func with<R: Sendable>(_ body: (UnsafeMutablePointer<sw_stack_t>, UnsafeMutableRawPointer) -> R) -> R {
        slot.withLock { body($0.stack, $0.scratch) }
    }

    /// The scratch's length.
    static let scratchBytes = Int(SW_BLOCKED_SCAN_BYTES)
}
