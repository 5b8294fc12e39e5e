import StallwatchPolicy
import StallwatchReport

/// A stall report made the way the watchdog makes one (a call tree of three samples, a classified
/// cause), for the report and export tests.
package enum ReportFixture {
    package static func report(otherThreads: [ThreadStack]? = nil) -> StallReport {
        var tree = CallTree(samples: [sample(0x100, 0x200, 0x300), sample(0x100, 0x200, 0x300), sample(0x100, 0x400)])
        let names: [FrameKey: String] = [0x100: "main", 0x200: "Server.handle()", 0x300: "parse(_:)", 0x400: "log(_:)"]
        let describe = { (key: FrameKey) in
            SymbolInfo(module: "/usr/bin/app", moduleOffset: key.address - 0x10, buildID: "ab12", symbol: names[key])
        }
        let frames = FrameTable(describing: tree, describe)
        return StallReport(
            kind: .stall, id: "r-1",
            cause: CauseClassifier().classify(ThreadEvidence(state: "R", cpuTimeDelta: .seconds(2), wallDelta: .seconds(2), threadCount: 4)),
            loopName: "NIO-ELT-0-#0", thread: ThreadIdentity(id: 4242, name: "NIO-ELT-0-#0"),
            startTimeUnixNanoseconds: 1_763_800_000_000_000_000, duration: .milliseconds(2500), durationIsFinal: false,
            sampleCount: tree.sampleCount,
            blamedStack: ReportFrame.blamedStack(of: tree, frames: frames),
            callTree: ReportCallTreeNode.flatten(&tree, frames: frames),
            otherThreads: otherThreads, threadCount: 4,
            threadCPU: [ThreadCPUUsage(thread: ThreadIdentity(id: 4242, name: "NIO-ELT-0-#0"), cpuPercent: 99.5)],
            process: ProcessFacts(cpuPercent: 120, residentBytes: 50_000_000, cores: 2),
            numa: NUMAFacts(nodes: [NUMANode(id: 0, cpus: [0, 1], memoryBytes: 4 << 30, freeBytes: 1 << 30)], stalledThreadNode: 0),
            configuration: WatchdogConfiguration(),
            counters: ReportCounters(filteredSinceLastReport: 3, suppressedSinceLastReport: 0, suppressedTotal: 0))
    }
}

/// A sample from root-first function keys (easier to read than leaf-first in tests).
private func sample(_ rootFirst: FrameKey...) -> StackSample {
    StackSample(frames: rootFirst.reversed())
}
