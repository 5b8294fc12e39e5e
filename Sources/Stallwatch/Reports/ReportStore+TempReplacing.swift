// TEMPORARY shim until the store's replacing write lands (h-report branch).
import Foundation
import StallwatchPolicy

extension ReportStore {
    func write(_ report: StallReport, replacing previous: String?) throws(ReportStoreError) -> String {
        let path = try write(report)
        if let previous, previous != path { unlink(previous) }
        return path
    }
}
