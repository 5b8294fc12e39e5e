import CSampler
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch

/// `bench sampler --sweep`: interval × unwinder × depth × threads, short alternating phases.
struct SweepRunner {
    let command: SamplerBenchmark
    let machine: MachineDescription

    /// One measured cell of the sweep.
    struct Cell: Codable {
        var depth: Int
        var threads: Int
        var intervalMilliseconds: Double
        var row: CostRow
        var floorLatencyMedianMicroseconds: Double
    }

    func run() throws {
        let intervals = parseList(command.sweepIntervals) ?? []
        let depths = (parseList(command.sweepDepths) ?? []).map { Int($0) }
        let threadCounts = (parseList(command.sweepThreads) ?? []).map { Int($0) }
        let phaseSeconds = command.sweepPhaseSeconds
        let rounds = command.sweepRounds
        // Per group: off once, then per interval floor, thread/fp, thread/libunwind, timer/fp.
        var specs = [PhaseSpec(mode: .off, intervalMilliseconds: 0, unwinder: "fp")]
        for i in intervals {
            specs += [PhaseSpec(mode: .floor, intervalMilliseconds: i, unwinder: "none"),
                      PhaseSpec(mode: .thread, intervalMilliseconds: i, unwinder: "fp"),
                      PhaseSpec(mode: .thread, intervalMilliseconds: i, unwinder: "libunwind"),
                      PhaseSpec(mode: .timer, intervalMilliseconds: i, unwinder: "fp")]
        }
        let groups = depths.count * threadCounts.count
        let expected = Double(groups) * (Double(rounds * specs.count) * (phaseSeconds + 0.05) + 0.5)
        print("sweep: intervals \(intervals.map { Fmt.f($0, 0) }.joined(separator: ",")) ms × unwinder fp,libunwind × depth \(depths.map(String.init).joined(separator: ",")) × threads \(threadCounts.map(String.init).joined(separator: ","))")
        print("method: per (depth, threads) group a fresh workload; \(rounds) rounds × \(specs.count) phases × \(Fmt.f(phaseSeconds, 2)) s, order rotated every round; expected run time ≈ \(Int(expected)) s (\(Fmt.f(expected / 60, 1)) min)")
        let started = Workload.now()
        var cells: [Cell] = []
        var slotsTouched = false
        for depth in depths {
            for threads in threadCounts {
                let workload = Workload(depth: depth, threads: threads)
                workload.start()
                if !slotsTouched, let target = workload.tids.first {
                    // Request slots are global: touched once, they stay resident for every group.
                    try touchRequestSlots(target: target, unwinders: [SW_UNWIND_FRAME_POINTER, SW_UNWIND_LIBUNWIND])
                    slotsTouched = true
                }
                let fastest = intervals.min() ?? 1
                let runner = PhaseRunner(workload: workload,
                                         maxSamplesPerPhase: Int(phaseSeconds * 1000 / max(fastest, 1) * Double(threads)) * 2 + 512)
                var outcomes: [PhaseSpec: [(on: PhaseOutcome, off: PhaseOutcome)]] = [:]
                for round in 0..<rounds {
                    let rotated = (0..<specs.count).map { specs[($0 + round) % specs.count] }
                    var results: [PhaseSpec: PhaseOutcome] = [:]
                    for spec in rotated { results[spec] = try runner.run(spec, seconds: phaseSeconds) }
                    guard let off = results[specs[0]] else { throw BenchError("sweep: no off phase") }
                    for spec in specs.dropFirst() { if let on = results[spec] { outcomes[spec, default: []].append((on, off)) } }
                }
                workload.finish()
                usleep(50_000)
                for i in intervals {
                    let floorRow = CostRow(label: "floor", rounds: outcomes[PhaseSpec(mode: .floor, intervalMilliseconds: i, unwinder: "none")] ?? [])
                    for spec in specs.dropFirst() where spec.intervalMilliseconds == i {
                        var row = CostRow(label: spec.label, rounds: outcomes[spec] ?? [])
                        if threads > machine.logicalCPUs {
                            row.note = "threads > CPUs: gaps include preemption"
                        }
                        cells.append(Cell(depth: depth, threads: threads, intervalMilliseconds: i, row: row,
                                          floorLatencyMedianMicroseconds: floorRow.latencyMedianMicroseconds))
                    }
                    cells.append(Cell(depth: depth, threads: threads, intervalMilliseconds: i,
                                      row: timerLibunwindRow(), floorLatencyMedianMicroseconds: floorRow.latencyMedianMicroseconds))
                }
                FileHandle.standardError.write(Data("sweep group depth \(depth) threads \(threads) done (\(Int(Double(Workload.now() - started) / 1e9)) s)\n".utf8))
            }
        }
        let elapsed = Double(Workload.now() - started) / 1e9
        printTable(cells, rounds: rounds, phaseSeconds: phaseSeconds)
        print("run time: \(Fmt.f(elapsed, 1)) s (expected ≈ \(Int(expected)) s)")
        if let json = command.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            try encoder.encode(cells).write(to: URL(fileURLWithPath: json))
            print("figures written to \(json)")
        }
    }

    private func timerLibunwindRow() -> CostRow {
        var row = CostRow(label: "timer/libunwind", rounds: [])
        row.note = "n/a: the timer ring walks frame pointers in the handler"
        return row
    }

    private func printTable(_ cells: [Cell], rounds: Int, phaseSeconds: Double) {
        let f = Fmt.f, pad = Fmt.pad
        print("")
        print("SWEEP (throughput loss and sampler CPU: median [min…max] over \(rounds) rounds; stolen [gap method] and latency: pooled p50/p99; ratio = ÷ the floor median of the same cell's interval and group)")
        print(pad("depth", 6) + pad("thr", 4) + pad("ms", 5) + pad("mode", 18) + pad("samples/s", 10) + pad("thr. loss %", 24)
              + pad("sampler CPU %", 24) + pad("[gap] stolen µs p50/p99", 24) + pad("[tail] p50", 11) + pad("below", 6) + pad("latency µs p50/p99", 20)
              + pad("× floor", 12) + pad("frames", 7) + "note")
        for c in cells {
            let r = c.row
            if r.note?.hasPrefix("n/a") == true {
                print(pad("\(c.depth)", 6) + pad("\(c.threads)", 4) + pad(f(c.intervalMilliseconds, 0), 5) + pad(r.label, 18) + (r.note ?? ""))
                continue
            }
            let lat = r.latencyMedianMicroseconds.isNaN ? "-" : "\(f(r.latencyMedianMicroseconds, 1))/\(f(r.latencyP99Microseconds, 1))"
            let ratio = r.latencyMedianMicroseconds.isNaN ? "-" : "\(f(r.latencyMedianMicroseconds / c.floorLatencyMedianMicroseconds, 2))/\(f(r.latencyP99Microseconds / c.floorLatencyMedianMicroseconds, 2))"
            var note = r.note ?? ""
            if r.throughputLossPercent.width > abs(r.throughputLossPercent.median) { note += (note.isEmpty ? "" : "; ") + "loss spread > effect" }
            print(pad("\(c.depth)", 6) + pad("\(c.threads)", 4) + pad(f(c.intervalMilliseconds, 0), 5) + pad(r.label, 18)
                  + pad(f(r.samplesPerSecond.median, 0), 10) + pad(Fmt.s(r.throughputLossPercent, 2), 24)
                  + pad(Fmt.s(r.samplerCPUPercentOfCore, 3), 24)
                  + pad("\(f(r.stolenPerSampleGapMedianMicroseconds, 2))/\(f(r.stolenPerSampleGapP99Microseconds, 2))", 24)
                  + pad(f(r.stolenTailMedianMicroseconds, 2), 11) + pad("\(r.samplesBelowThreshold)", 6) + pad(lat, 20) + pad(ratio, 12) + pad(f(r.framesMedian, 0), 7) + note)
        }
    }
}
