import Foundation

/// libFuzzer target: the report decoder (what `stallwatch show` and `ReportStore.read` run on any
/// file they are given) must reject bad input with an error, never crash or trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReportDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    if let report = try? JSONDecoder().decode(StallReport.self, from: bytes) {
        // What readers do with a decoded report must not trap either.
        _ = report.blamedSummary()
        _ = ReportCallTreeNode.leafPaths(report.callTree)
        _ = try? JSONEncoder().encode(report)
    }
    return 0
}
