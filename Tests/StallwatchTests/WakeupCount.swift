import Foundation
@testable import Stallwatch

/// How many times `tid` went to sleep and was woken: its voluntary context switches
/// (`/proc/self/task/<tid>/status`). Unlike schedstat's timeslice count, a preemption by another
/// thread (a build beside the tests, an ASan-slowed neighbour) does not count: a test of how often
/// the watchdog wakes stays a count of its own sleeps on a loaded machine.
func wakeups(of tid: ThreadID) throws -> UInt64 {
    let text = try String(contentsOfFile: "/proc/self/task/\(tid.rawValue)/status", encoding: .utf8)
    for line in text.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
        if let n = UInt64(line.dropFirst("voluntary_ctxt_switches:".count).trimmingCharacters(in: .whitespaces)) { return n }
    }
    throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: "/proc/self/task/\(tid.rawValue)/status"])
}
