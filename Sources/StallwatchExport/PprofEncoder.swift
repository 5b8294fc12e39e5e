import StallwatchReport
/// Encodes stall reports as a pprof profile (`perftools.profiles.Profile`, uncompressed; pprof
/// files are this, gzipped): what `go tool pprof`, Pyroscope and Parca read.
///
/// Two sample types, `samples/count` (the default) and `wall/nanoseconds` (samples × the sampling
/// interval). Every sample carries its stall's facts as labels (`stall_id`, `loop`, `thread`,
/// `thread_id`, `cause`, `stall_duration`; and `http.route`, `http.method`, `trace_id`, `span_id`
/// when the stall served a named request), so one file can hold many stalls and still be sliced
/// by them (`go tool pprof -tagfocus cause=lockWait`).
package enum PprofEncoder {
    // Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto).
    private enum Profile {
        static let sampleType = 1, sample = 2, mapping = 3, location = 4, function = 5, stringTable = 6
        static let timeNanos = 9, durationNanos = 10, periodType = 11, period = 12, comment = 13
        static let defaultSampleType = 14
    }
    private enum ValueType { static let type = 1, unit = 2 }
    private enum Sample { static let locationID = 1, value = 2, label = 3 }
    private enum Label { static let key = 1, str = 2, num = 3, numUnit = 4 }
    private enum Mapping {
        static let id = 1, memoryStart = 2, memoryLimit = 3, filename = 5, buildID = 6, hasFunctions = 7
    }
    private enum Location { static let id = 1, mappingID = 2, address = 3, line = 4 }
    private enum Line { static let functionID = 1 }
    private enum Function { static let id = 1, name = 2, systemName = 3, filename = 4 }

    /// The profile of `profile`'s stacks, protobuf-encoded.
    package static func encode(_ profile: StallProfile) -> [UInt8] {
        var strings = StringTable()
        var out = ProtobufWriter()
        let samplesType = (strings.index("samples"), strings.index("count"))
        let wallType = (strings.index("wall"), strings.index("nanoseconds"))
        for (type, unit) in [samplesType, wallType] {
            out.message(Profile.sampleType) { $0.int64(ValueType.type, type); $0.int64(ValueType.unit, unit) }
        }

        // Locations and functions are one per distinct frame (ids are indices + 1); mappings one
        // per module.
        var moduleIDs: [String: UInt64] = [:]
        for (i, module) in profile.modules.enumerated() {
            let id = UInt64(i + 1)
            moduleIDs[module.path] = id
            let filename = strings.index(module.path)
            let buildID = module.buildID.map { strings.index($0) } ?? 0
            out.message(Profile.mapping) {
                $0.uint64(Mapping.id, id)
                $0.uint64(Mapping.memoryStart, module.base ?? 0)
                $0.uint64(Mapping.memoryLimit, max(module.limit, module.base ?? 0))
                $0.int64(Mapping.filename, filename)
                $0.int64(Mapping.buildID, buildID)
                // Names come from the report: consumers must not re-symbolize against local files.
                $0.bool(Mapping.hasFunctions, true)
            }
        }
        for (i, frame) in profile.frames.enumerated() {
            let id = UInt64(i + 1)
            let name = strings.index(frame.name)
            let filename = frame.module.map { strings.index($0) } ?? 0
            out.message(Profile.function) {
                $0.uint64(Function.id, id)
                $0.int64(Function.name, name)
                $0.int64(Function.systemName, name)
                $0.int64(Function.filename, filename)
            }
            out.message(Profile.location) {
                $0.uint64(Location.id, id)
                $0.uint64(Location.mappingID, frame.module.flatMap { moduleIDs[$0] } ?? 0)
                $0.uint64(Location.address, frame.address)
                $0.message(Location.line) { $0.uint64(Line.functionID, id) }
            }
        }

        let labels = profile.reports.map { labelsOf($0, strings: &strings) }
        for stack in profile.stacks {
            let report = profile.reports[stack.report]
            let interval = report.configuration.sampleInterval.clampedNanoseconds
            let (wall, overflow) = Int64(stack.count).multipliedReportingOverflow(by: interval)
            out.message(Profile.sample) { sample in
                // Leaf first, as profile.proto orders a sample's locations.
                sample.packed(Sample.locationID, stack.frames.reversed().map { UInt64($0 + 1) })
                sample.packed(Sample.value, [UInt64(stack.count), UInt64(bitPattern: overflow ? .max : wall)])
                for label in labels[stack.report] {
                    sample.message(Sample.label) {
                        $0.int64(Label.key, label.key)
                        $0.int64(Label.str, label.string)
                        $0.int64(Label.num, label.number)
                        $0.int64(Label.numUnit, label.unit)
                    }
                }
            }
        }

        let starts = profile.reports.map(\.startTimeUnixNanoseconds)
        let ends = profile.reports.map { $0.startTimeUnixNanoseconds.addingReportingOverflow($0.durationNanoseconds).partialValue }
        if let first = starts.min(), let last = ends.max() {
            out.int64(Profile.timeNanos, first)
            out.int64(Profile.durationNanos, max(0, last.subtractingReportingOverflow(first).partialValue))
        }
        out.message(Profile.periodType) { $0.int64(ValueType.type, wallType.0); $0.int64(ValueType.unit, wallType.1) }
        out.int64(Profile.period, profile.reports.first?.configuration.sampleInterval.clampedNanoseconds ?? 0)
        let comments = profile.reports.map { report in
            let cause = report.cause.map { "\($0.kind.rawValue): \($0.evidence)" } ?? "cause unknown"
            return strings.index("stall \(report.id) on \(report.loopName ?? "-"): \(cause); blamed \(report.blamedSummary())")
        }
        out.packed(Profile.comment, comments.map { UInt64(bitPattern: $0) })
        out.int64(Profile.defaultSampleType, samplesType.0)
        // The string table goes last: every index above has been handed out by now.
        for string in strings.strings { out.string(Profile.stringTable, string) }
        return out.bytes
    }

    private struct SampleLabel {
        var key: Int64
        var string: Int64 = 0
        var number: Int64 = 0
        var unit: Int64 = 0
    }

    private static func labelsOf(_ report: StallReport, strings: inout StringTable) -> [SampleLabel] {
        var labels = [SampleLabel(key: strings.index("stall_id"), string: strings.index(report.id))]
        if let loop = report.loopName {
            labels.append(SampleLabel(key: strings.index("loop"), string: strings.index(loop)))
        }
        if let thread = report.thread {
            labels.append(SampleLabel(key: strings.index("thread"), string: strings.index(thread.name)))
            labels.append(SampleLabel(key: strings.index("thread_id"), number: Int64(thread.id)))
        }
        if let cause = report.cause {
            labels.append(SampleLabel(key: strings.index("cause"), string: strings.index(cause.kind.rawValue)))
        }
        labels.append(SampleLabel(key: strings.index("stall_duration"), number: report.durationNanoseconds,
                                  unit: strings.index("nanoseconds")))
        if let request = report.request {
            labels.append(SampleLabel(key: strings.index("http.route"), string: strings.index(request.route)))
            labels.append(SampleLabel(key: strings.index("http.method"), string: strings.index(request.method)))
            if let trace = request.traceID {
                labels.append(SampleLabel(key: strings.index("trace_id"), string: strings.index(trace)))
            }
            if let span = request.spanID {
                labels.append(SampleLabel(key: strings.index("span_id"), string: strings.index(span)))
            }
        }
        return labels
    }
}

/// A profile's string table: each distinct string once, "" at index 0 (pprof and OTLP alike).
struct StringTable {
    private(set) var strings: [String] = [""]
    private var indices: [String: Int64] = ["": 0]

    mutating func index(_ string: String) -> Int64 {
        if let known = indices[string] { return known }
        strings.append(string)
        indices[string] = Int64(strings.count - 1)
        return Int64(strings.count - 1)
    }
}
