import StallwatchReport

extension Show {
    /// A lock wait as `show` prints it: the sentence, the lock, then each holder's stack (every
    /// thread of a deadlock has one), leaf first.
    static func lockWaitLines(_ l: LockWaitFacts) -> [String] {
        let safe = TerminalSafeText.escaped
        var lines = ["lock: \(safe(l.summary))"]
        let stable = l.ownerStable == false ? "; changed hands as it was read" : ""
        lines.append("  \(l.primitive.rawValue) at \(l.lockAddress), \(l.ownership.rawValue)\(stable)")
        let links = l.chain ?? []
        if links.isEmpty, let holder = l.holder {
            lines.append(contentsOf: holderLines(holder, heading: "holder"))
        }
        for link in links {
            let heading = "\(threadText(link.waiter)) waits on \(link.lockAddress), held by"
            lines.append(contentsOf: holderLines(link.holder, heading: heading))
        }
        return lines
    }

    private static func holderLines(_ s: ThreadStack, heading: String) -> [String] {
        let call = s.syscall.map { " syscall \($0)" } ?? ""
        var lines = ["  \(heading) \(threadText(s.thread)) [\(TerminalSafeText.escaped(s.state))\(call)]:"]
        lines.append(contentsOf: s.frames.map { "        \(frameText($0))" })
        if s.frames.isEmpty { lines.append("        (no stack captured)") }
        return lines
    }
}
