import CSampler

/// Request slots in CSampler/src/capture.c (`SW_SLOTS`). Requests take them round-robin, so a short
/// run uses a never-touched slot for nearly every sample and pays a page fault in the handler: the
/// PC-only floor took 15 µs in the handler against 0.8 µs for the ring before slots were touched.
let requestSlots = 512

/// Makes every request slot (and its stack-copy buffer, for libunwind) resident by capturing the
/// target once per slot with each unwinder, so no measured handler pays a first-touch page fault.
func touchRequestSlots(target: Int32, unwinders: [sw_unwinder_t]) throws {
    let stack = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: 1)
    defer { stack.deallocate() }
    for unwinder in unwinders {
        for _ in 0..<requestSlots {
            let rc = sw_capture(target, unwinder, 128, 100_000_000, stack)
            guard rc == 0 else { throw BenchError("touching request slots: sw_capture failed: \(rc)") }
        }
    }
}
