import CSampler
@testable import Stallwatch
import StallwatchPolicy
import StallwatchReport
import Testing

/// A loop monitor keeps the frame storage of samples it lets go and hands it to new ones (issue
/// 19: a drained sample is copied without allocating), without mixing up what samples it keeps.
@Suite struct LoopMonitorSampleStorageTests {
    private func monitor() -> LoopMonitor {
        let configuration = WatchdogConfiguration(threshold: .milliseconds(500))
        return LoopMonitor(source: .heartbeat(HeartbeatProbe(name: "storage")), configuration: configuration,
                           schedule: DetectionSchedule(configuration: configuration))
    }

    private func stack(_ frames: [UInt]) -> CapturedStack {
        CapturedStack(thread: ThreadID(rawValue: 1), frames: frames, unwinder: .framePointer)
    }

    @Test func forgottenSamplesLeaveTheirStorageForNewOnes() {
        let m = monitor()
        #expect(m.takeFrameStorage().capacity == 0)
        var frames: [UInt] = []
        frames.reserveCapacity(64)
        frames.append(contentsOf: [1, 2, 3])
        m.append(stack(frames))
        frames = []
        m.forgetBusyPeriod(keepRing: true)
        #expect(m.samples.isEmpty)
        let reused = m.takeFrameStorage()
        #expect(reused.capacity >= 64)
        // Handed out once: the next one is new.
        #expect(m.takeFrameStorage().capacity == 0)
    }

    @Test func theOldestSampleIsPushedOutAndItsStorageKept() {
        let m = monitor()
        for i in 0..<(LoopMonitor.maxSamples + 2) { m.append(stack([UInt(i) + 1, 7])) }
        #expect(m.samples.count == LoopMonitor.maxSamples)
        #expect(m.samples.first?.frames == [3, 7])
        #expect(m.samples.last?.frames == [UInt(LoopMonitor.maxSamples) + 2, 7])
        #expect(m.samplesAdded == LoopMonitor.maxSamples + 2)
        #expect(m.takeFrameStorage().capacity >= 2)
        #expect(m.takeFrameStorage().capacity >= 2)
        #expect(m.takeFrameStorage().capacity == 0)
    }

    @Test func aRefusedSampleIsNotKeptButItsStorageIs() {
        let m = monitor()
        m.accepts = { $0.frames.first != 9 }
        m.append(stack([9, 1]))
        m.append(stack([5, 1]))
        #expect(m.samples.map(\.frames) == [[5, 1]])
        #expect(m.samplesAdded == 1)
        #expect(m.takeFrameStorage().capacity >= 2)
    }

    @Test func aStackFromTheRingKeepsItsFramesInReusedStorage() throws {
        var raw = sw_stack_t()
        raw.count = 3
        withUnsafeMutableBytes(of: &raw.frames) { bytes in
            let words = bytes.bindMemory(to: UInt64.self)
            words[0] = 0x10; words[1] = 0x20; words[2] = 0x30
        }
        var storage: [UInt] = [99, 98, 97, 96, 95]
        storage.reserveCapacity(32)
        let stack = withUnsafePointer(to: &raw) { CapturedStack($0, reusing: storage) }
        storage = []
        #expect(stack.frames == [0x10, 0x20, 0x30])
        #expect(stack.frames.capacity >= 32)
    }
}
