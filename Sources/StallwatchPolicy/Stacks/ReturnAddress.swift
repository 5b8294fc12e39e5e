/// Where a stack frame's address is looked up, the one rule for every symbolization.
///
/// A return address points just after its call instruction: when the call ends its function (a
/// call that never returns), that is already the next function's first byte, so it is looked up
/// one byte before, inside the call. The innermost frame is the interrupted program counter, an
/// instruction not run yet, and is looked up as it is; so is a zero address, which is no code.
///
/// A frame read from a Swift task's chain of async contexts (the callers of an async function
/// that resumed after an `await`) is no return address: it is stored as its resume function's
/// entry + 1, so that this same rule lands on the entry and names the resume function.
package enum ReturnAddress {
    /// Whether the frame at `address` is looked up one byte before it; `innermost` for a stack's
    /// first frame (the interrupted program counter).
    package static func isInsideCall<Address: FixedWidthInteger & UnsignedInteger>(_ address: Address, innermost: Bool) -> Bool {
        !innermost && address != 0
    }

    /// The address at which the frame at `address` is looked up.
    package static func lookup<Address: FixedWidthInteger & UnsignedInteger>(_ address: Address, innermost: Bool) -> Address {
        isInsideCall(address, innermost: innermost) ? address - 1 : address
    }
}
