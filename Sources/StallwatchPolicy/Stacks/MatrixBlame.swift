import StallwatchReport
/// matrix's blame rule, kept only so tests can show where the call tree does better: take the
/// newest sample that ends the longest run of consecutive samples with the same top frame.
package enum MatrixBlame {
    /// The sample matrix would blame, or `nil` for no samples. Samples are oldest first.
    package static func pick(_ samples: [StackSample]) -> StackSample? {
        var best: (index: Int, run: Int)?
        var run = 0
        for index in samples.indices {
            let continues = index > 0 && samples[index].leaf == samples[index - 1].leaf
            run = continues ? run + 1 : 1
            // `>=` so that among equal runs the newest wins, as in matrix.
            if run >= (best?.run ?? 0) { best = (index, run) }
        }
        return best.map { samples[$0.index] }
    }
}
