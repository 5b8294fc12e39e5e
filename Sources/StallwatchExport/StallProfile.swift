import StallwatchReport
/// The samples of one or more stall reports as stacks of named frames: what the pprof encoder and
/// the flame graph are drawn from. Built from each report's call tree (every sample is in it),
/// so its counts are the report's counts.
package struct StallProfile: Sendable, Equatable {
    /// One distinct frame: a function (or a bare address) in a module.
    package struct Frame: Sendable, Hashable {
        /// What people read: the demangled symbol, else `module+0xoffset`, else the raw address.
        package var name: String
        /// The module's path, when known.
        package var module: String?
        /// The function key's address (function start, or the raw PC when unnamed).
        package var address: UInt64
        /// The application's code or the system's.
        package var origin: FrameOrigin
    }

    /// One module seen in the stacks, with what the reports say about where it was loaded.
    package struct Module: Sendable, Equatable {
        /// Path or soname.
        package var path: String
        /// The GNU build id, hex, when a frame recorded it.
        package var buildID: String?
        /// Load base (an address minus its module offset), when a frame recorded both.
        package var base: UInt64?
        /// One past the highest address seen in the module.
        package var limit: UInt64
    }

    /// Samples sharing one stack in one report.
    package struct Stack: Sendable, Equatable {
        /// Indices into ``frames``, root first.
        package var frames: [Int]
        /// How many samples ended at this stack's leaf.
        package var count: Int
        /// Index into ``reports`` of the report it came from.
        package var report: Int
        /// When each of the ``count`` samples was taken (ns after its report's start), when the
        /// report kept it.
        package var offsets: [Int64]? = nil
    }

    /// The reports, in the order given.
    package var reports: [StallReport]
    /// Every distinct frame.
    package var frames: [Frame]
    /// Every module: the application's, then the system's, each in order of first appearance.
    package var modules: [Module]
    /// The stacks, in report order, each report's in call-tree order.
    package var stacks: [Stack]

    /// Collects the stacks of `reports`.
    package init(reports: [StallReport]) {
        self.reports = reports
        var frames: [Frame] = []
        var frameIndex: [Frame: Int] = [:]
        var modules: [Module] = []
        var moduleIndex: [String: Int] = [:]
        var stacks: [Stack] = []

        // Build ids and load bases are recorded on stack frames, not on call tree nodes.
        for report in reports {
            for frame in report.blamedStack + (report.otherThreads ?? []).flatMap(\.frames) {
                guard let path = frame.module else { continue }
                let index = moduleIndex[path] ?? {
                    modules.append(Module(path: path, buildID: nil, base: nil, limit: 0))
                    moduleIndex[path] = modules.count - 1
                    return modules.count - 1
                }()
                modules[index].buildID = modules[index].buildID ?? frame.buildID
                if modules[index].base == nil, let offset = frame.moduleOffset?.value, offset <= frame.address.value {
                    modules[index].base = frame.address.value - offset
                }
            }
        }
        for (reportIndex, report) in reports.enumerated() {
            let nodeFrames = report.callTree.map { node -> Int in
                if let path = node.module, moduleIndex[path] == nil {
                    modules.append(Module(path: path, buildID: nil, base: nil, limit: 0))
                    moduleIndex[path] = modules.count - 1
                }
                let module = node.module.flatMap { moduleIndex[$0] }.map { modules[$0] }
                if let path = node.module, let index = moduleIndex[path], node.address.value < .max {
                    modules[index].limit = max(modules[index].limit, node.address.value + 1)
                }
                let frame = Frame(name: Self.name(symbol: node.symbol, module: module, address: node.address.value),
                                  module: node.module, address: node.address.value, origin: node.resolvedOrigin)
                if let known = frameIndex[frame] { return known }
                frames.append(frame)
                frameIndex[frame] = frames.count - 1
                return frames.count - 1
            }
            for (path, count) in ReportCallTreeNode.leafPaths(report.callTree) {
                let offsets = path.last.flatMap { report.callTree[$0].sampleOffsetsNanoseconds }
                stacks.append(Stack(frames: path.map { nodeFrames[$0] }, count: count, report: reportIndex,
                                    offsets: offsets?.count == count ? offsets : nil))
            }
        }
        self.frames = frames
        // The application's modules first: pprof takes the first mapping for the main binary.
        self.modules = modules.filter { FrameOrigin(module: $0.path) == .application }
            + modules.filter { FrameOrigin(module: $0.path) == .system }
        self.stacks = stacks
    }

    /// Samples in all stacks.
    package var sampleCount: Int { stacks.reduce(0) { $0 + $1.count } }

    /// A frame's name for people: the symbol, else `libc.so.6+0x891f5` when the module's load base
    /// is known, else `libc.so.6 0x7f…`, else the address.
    static func name(symbol: String?, module: Module?, address: UInt64) -> String {
        if let symbol, !symbol.isEmpty { return symbol }
        guard let module else { return ReportAddress(address).description }
        let file = module.path.split(separator: "/").last.map(String.init) ?? module.path
        if let base = module.base, address >= base { return "\(file)+\(ReportAddress(address - base))" }
        return "\(file) \(ReportAddress(address))"
    }
}
