import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// A pprof file (gzipped `profile.proto`) of stall reports' samples, as `go tool pprof`,
/// Pyroscope and Parca read it.
package enum PprofFile {
    /// The file's bytes for `reports` (see `StallwatchExport.PprofEncoder` for what it holds).
    package static func bytes(of reports: [StallReport]) throws(Compression.Failure) -> [UInt8] {
        try Compression.gzip(PprofEncoder.encode(StallProfile(reports: reports)))
    }
}
