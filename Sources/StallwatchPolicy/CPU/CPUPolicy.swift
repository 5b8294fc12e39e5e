import StallwatchReport
/// matrix's CPU policy as a pure function of periodic readings: "process CPU high" (edge
/// triggered) and "sustained high" (see ``SustainedCPUTracker``).
package struct CPUPolicy: Sendable, Equatable {
    private let settings: CPUConfiguration
    private var sustained: SustainedCPUTracker
    // Edge trigger: one event when usage goes high, re-armed once it drops, instead of one per
    // reading for as long as the process stays busy.
    private var processHighActive = false

    /// Creates a policy.
    package init(settings: CPUConfiguration) {
        self.settings = settings
        self.sustained = SustainedCPUTracker(settings: settings)
    }

    /// The sustained tracker's phase, for diagnostics and tests.
    package var sustainedPhase: SustainedCPUTracker.Phase { sustained.phase }

    /// Assesses one reading.
    package mutating func ingest(_ reading: CPUReading) -> CPUAssessment {
        // A period of zero gives no ratio; a long one means the process (or VM) was stopped.
        guard reading.wallDelta > .zero, reading.wallDelta <= settings.maximumReadingPeriod else {
            return CPUAssessment(usage: nil, events: [])
        }
        let usage = reading.processCPUTimeDelta / reading.wallDelta
        var events: [CPUEvent] = []
        if usage > settings.processHighFraction * Double(max(reading.cores, 1)) {
            if !processHighActive {
                events.append(.processCPUHigh(usage: usage, topThreads: topThreads(reading)))
            }
            processHighActive = true
        } else {
            processHighActive = false
        }
        if let event = sustained.ingest(cpu: reading.processCPUTimeDelta, wall: reading.wallDelta) {
            events.append(event)
        }
        return CPUAssessment(usage: usage, events: events)
    }

    private func topThreads(_ reading: CPUReading) -> [ThreadCPUShare] {
        let shares = reading.threads.map {
            ThreadCPUShare(threadID: $0.threadID, name: $0.name, fraction: $0.cpuTimeDelta / reading.wallDelta)
        }
        let eligible = shares.filter { $0.fraction > settings.topThreadMinimumFraction }
        // Ties broken by thread id so the output does not depend on enumeration order.
        let ordered = eligible.sorted { $0.fraction != $1.fraction ? $0.fraction > $1.fraction : $0.threadID < $1.threadID }
        return Array(ordered.prefix(settings.topThreadCount))
    }
}
