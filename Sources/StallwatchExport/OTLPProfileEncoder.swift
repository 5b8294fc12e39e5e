import StallwatchReport

/// Stall reports as one OTLP profiles request (`ExportProfilesServiceRequest` of
/// `opentelemetry/proto/profiles/v1development`, the signal's alpha definitions): one profile per
/// stall, its stacks and functions through the request's shared dictionary tables, what
/// `POST /v1development/profiles` takes.
///
/// Each profile: the stall's samples by stack (`samples/count`, from the report's call tree, so
/// the counts are the report's and `stallwatch pprof`'s), its start and duration, the sampling
/// interval as the period, its facts as attributes (`stallwatch.report_id`, `stallwatch.cause`,
/// `stallwatch.loop`, `thread.id`, `thread.name`, `stallwatch.duration_ms`), the stalled request's
/// trace and span as every sample's link, and the report's JSON as the original payload. Where the
/// report kept when each sample was taken, a stack's samples carry those times, one value of 1 per
/// time (the definitions pair `values` with `timestamps_unix_nano` one to one); else one value, the
/// count.
package enum OTLPProfileEncoder {
    private enum Request { static let resourceProfiles = 1, dictionary = 2 }
    private enum ResourceProfiles { static let resource = 1, scopeProfiles = 2 }
    private enum Resource { static let attributes = 1 }
    private enum KeyValue { static let key = 1, value = 2 }
    private enum AnyValue { static let string = 1 }
    private enum ScopeProfiles { static let scope = 1, profiles = 2 }
    private enum Scope { static let name = 1 }
    private enum Profile {
        static let sampleType = 1, samples = 2, timeUnixNano = 3, durationNano = 4, periodType = 5, period = 6
        static let profileID = 7, originalPayloadFormat = 9, originalPayload = 10, attributeIndices = 11
    }
    private enum ValueType { static let type = 1, unit = 2 }
    private enum Sample { static let stackIndex = 1, attributeIndices = 2, linkIndex = 3, values = 4, timestamps = 5 }
    private enum Dictionary {
        static let mapping = 1, location = 2, function = 3, link = 4, string = 5, attribute = 6, stack = 7
    }
    private enum Mapping { static let memoryStart = 1, memoryLimit = 2, filename = 4, attributeIndices = 5 }
    private enum Location { static let mappingIndex = 1, address = 2, line = 3 }
    private enum Line { static let functionIndex = 1 }
    private enum Function { static let name = 1, systemName = 2, filename = 3 }
    private enum Link { static let traceID = 1, spanID = 2 }
    private enum Stack { static let locationIndices = 1 }

    /// One stall to encode: its report, and the report's JSON as the profile's original payload.
    package struct Item: Sendable {
        package var report: StallReport
        package var json: [UInt8]?
        /// Why part of the profile was left out (its `stallwatch.cut` attribute), if it was.
        package var cut: String?

        /// A stall and, when given, its report as JSON.
        package init(report: StallReport, json: [UInt8]? = nil) {
            self.report = report
            self.json = json
        }
    }

    /// The request for `items`, protobuf-encoded, under a resource with `resource`'s attributes
    /// (`service.name`...; none when empty).
    package static func encode(_ items: [Item], resource: [String: String] = [:]) -> [UInt8] {
        let profile = StallProfile(reports: items.map(\.report))
        var strings = StringTable()
        var attributes = AttributeTable()
        var links: [[UInt8]] = []   // each an encoded Link; index 0 is the empty one
        var linkIndex: [String: Int] = [:]

        var profiles: [[UInt8]] = []
        for (reportIndex, item) in items.enumerated() {
            let report = item.report
            var link = 0
            if let request = report.request, let trace = hexBytes(request.traceID, count: 16) {
                let span = hexBytes(request.spanID, count: 8) ?? []
                let key = "\(request.traceID ?? "")/\(request.spanID ?? "")"
                link = linkIndex[key] ?? {
                    var w = ProtobufWriter()
                    w.byteString(Link.traceID, trace)
                    w.byteString(Link.spanID, span)
                    links.append(w.bytes)
                    linkIndex[key] = links.count
                    return links.count
                }()
            }
            var facts: [Int] = [
                attributes.index("stallwatch.report_id", .string(report.id), &strings),
                attributes.index("stallwatch.duration_ms", .int(report.durationNanoseconds / 1_000_000), &strings),
            ]
            if let cause = report.cause?.kind.rawValue { facts.append(attributes.index("stallwatch.cause", .string(cause), &strings)) }
            if let loop = report.loopName { facts.append(attributes.index("stallwatch.loop", .string(loop), &strings)) }
            if let cut = item.cut { facts.append(attributes.index("stallwatch.cut", .string(cut), &strings)) }
            if let thread = report.thread {
                facts.append(attributes.index("thread.id", .int(Int64(thread.id)), &strings))
                facts.append(attributes.index("thread.name", .string(thread.name), &strings))
            }
            var w = ProtobufWriter()
            w.message(Profile.sampleType) { v in
                v.int64(ValueType.type, strings.index("samples"))
                v.int64(ValueType.unit, strings.index("count"))
            }
            for (stackIndex, stack) in profile.stacks.enumerated() where stack.report == reportIndex {
                w.message(Profile.samples) { s in
                    s.int64(Sample.stackIndex, Int64(stackIndex + 1))
                    s.int64(Sample.linkIndex, Int64(link))
                    if let offsets = stack.offsets {
                        s.packed(Sample.values, Array(repeating: 1, count: offsets.count))
                        s.packedFixed64(Sample.timestamps, offsets.map { UInt64(max(report.startTimeUnixNanoseconds &+ $0, 0)) })
                    } else {
                        s.packed(Sample.values, [UInt64(stack.count)])
                    }
                }
            }
            w.fixed64(Profile.timeUnixNano, UInt64(max(report.startTimeUnixNanoseconds, 0)))
            w.uint64(Profile.durationNano, UInt64(max(report.durationNanoseconds, 0)))
            w.message(Profile.periodType) { v in
                v.int64(ValueType.type, strings.index("wall"))
                v.int64(ValueType.unit, strings.index("nanoseconds"))
            }
            w.int64(Profile.period, report.sampling?.intervalNanoseconds ?? 0)
            w.byteString(Profile.profileID, profileID(report.id))
            if let json = item.json {
                w.string(Profile.originalPayloadFormat, "json")
                w.byteString(Profile.originalPayload, json)
            }
            w.packed(Profile.attributeIndices, facts.map(UInt64.init))
            profiles.append(w.bytes)
        }

        var out = ProtobufWriter()
        out.message(Request.resourceProfiles) { r in
            if !resource.isEmpty {
                r.message(ResourceProfiles.resource) { res in
                    for (key, value) in resource.sorted(by: { $0.key < $1.key }) {
                        res.message(Resource.attributes) { kv in
                            kv.string(KeyValue.key, key)
                            kv.message(KeyValue.value) { $0.string(AnyValue.string, value) }
                        }
                    }
                }
            }
            r.message(ResourceProfiles.scopeProfiles) { s in
                s.message(ScopeProfiles.scope) { $0.string(Scope.name, "stallwatch") }
                for p in profiles { s.message(ScopeProfiles.profiles) { $0.append(raw: p) } }
            }
        }
        // Every table's index 0 is the empty entry: a zero index means "none".
        let moduleIndex = Swift.Dictionary(uniqueKeysWithValues: profile.modules.enumerated().map { ($1.path, $0 + 1) })
        var mappings: [[UInt8]] = []
        for module in profile.modules {
            var m = ProtobufWriter()
            m.uint64(Mapping.memoryStart, module.base ?? 0)
            m.uint64(Mapping.memoryLimit, module.limit)
            m.int64(Mapping.filename, strings.index(module.path))
            if let id = module.buildID {
                m.packed(Mapping.attributeIndices, [UInt64(attributes.index("process.executable.build_id.gnu", .string(id), &strings))])
            }
            mappings.append(m.bytes)
        }
        var functions: [[UInt8]] = [], locations: [[UInt8]] = []
        for (i, frame) in profile.frames.enumerated() {
            var f = ProtobufWriter()
            f.int64(Function.name, strings.index(frame.name))
            f.int64(Function.systemName, strings.index(frame.name))
            if let module = frame.module { f.int64(Function.filename, strings.index(module)) }
            functions.append(f.bytes)
            var l = ProtobufWriter()
            l.int64(Location.mappingIndex, Int64(frame.module.flatMap { moduleIndex[$0] } ?? 0))
            l.uint64(Location.address, frame.address)
            l.message(Location.line) { $0.int64(Line.functionIndex, Int64(i + 1)) }
            locations.append(l.bytes)
        }
        out.message(Request.dictionary) { d in
            d.emptyMessage(Dictionary.mapping)
            for m in mappings { d.message(Dictionary.mapping) { $0.append(raw: m) } }
            d.emptyMessage(Dictionary.location)
            for l in locations { d.message(Dictionary.location) { $0.append(raw: l) } }
            d.emptyMessage(Dictionary.function)
            for f in functions { d.message(Dictionary.function) { $0.append(raw: f) } }
            d.emptyMessage(Dictionary.link)
            for l in links { d.message(Dictionary.link) { $0.append(raw: l) } }
            for s in strings.strings { d.string(Dictionary.string, s) }
            d.emptyMessage(Dictionary.attribute)
            for a in attributes.encoded { d.message(Dictionary.attribute) { $0.append(raw: a) } }
            d.emptyMessage(Dictionary.stack)
            // Leaf first, as pprof's location ids are.
            for stack in profile.stacks {
                d.message(Dictionary.stack) { $0.packed(Stack.locationIndices, stack.frames.reversed().map { UInt64($0 + 1) }) }
            }
        }
        return out.bytes
    }

    /// A profile id of 16 bytes from the report id: two FNV-1a hashes, stable across processes.
    package static func profileID(_ id: String) -> [UInt8] {
        func fnv(_ seed: UInt64) -> UInt64 {
            var h = seed
            for b in id.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            return h
        }
        let halves = [fnv(0xcbf2_9ce4_8422_2325), fnv(0x84222325_cbf29ce4)]
        return halves.flatMap { h in (0..<8).map { UInt8(truncatingIfNeeded: h >> (8 * UInt64($0))) } }
    }

    /// `count` bytes from a hex string of exactly that length (trace and span ids), else `nil`.
    package static func hexBytes(_ hex: String?, count: Int) -> [UInt8]? {
        guard let hex, hex.utf8.count == count * 2 else { return nil }
        var out: [UInt8] = []
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return out.allSatisfy { $0 == 0 } ? nil : out
    }
}

/// The dictionary's attribute table: each distinct key and value once, index 0 the empty entry.
private struct AttributeTable {
    enum Value: Hashable { case string(String), int(Int64) }
    private(set) var encoded: [[UInt8]] = []
    private struct Key: Hashable { var key: String; var value: Value }
    private var byKey: [Key: Int] = [:]

    mutating func index(_ key: String, _ value: Value, _ strings: inout StringTable) -> Int {
        if let known = byKey[Key(key: key, value: value)] { return known }
        // KeyValueAndUnit: key_strindex = 1, value = 2; AnyValue: string_value = 1, int_value = 3.
        var w = ProtobufWriter()
        w.int64(1, strings.index(key))
        w.message(2) { v in
            switch value {
            case .string(let s): v.string(1, s)
            case .int(let i): v.int64(3, i)
            }
        }
        encoded.append(w.bytes)
        byKey[Key(key: key, value: value)] = encoded.count
        return encoded.count
    }
}
