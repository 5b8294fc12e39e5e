/// Order statistics for benchmark figures.
enum Stats {
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = min(max(p / 100 * Double(sorted.count - 1), 0), Double(sorted.count - 1))
        let lo = Int(rank.rounded(.down)), hi = Int(rank.rounded(.up))
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - Double(lo))
    }
    static func median(_ values: [Double]) -> Double { percentile(values, 50) }
}

/// A median with its spread over rounds.
struct Spread: Codable {
    var median: Double
    var min: Double
    var max: Double

    init(_ values: [Double]) {
        median = Stats.median(values)
        min = values.min() ?? .nan
        max = values.max() ?? .nan
    }
}
