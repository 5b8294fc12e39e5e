import Synchronization
import Stallwatch

// Uniquely named functions whose names a captured stack must show, in order. @inline(never) and
// the work after each call keep every level a real frame (no inlining, no tail calls).

@inline(never)
func stallwatchFixtureLeafSpin(_ thread: TestThread) -> Int {
    var n = 0
    while !thread.shouldStop { n &+= 1 }
    return n
}

@inline(never)
func stallwatchFixtureAlpha(_ depth: Int, _ thread: TestThread) -> Int {
    if depth == 0 { return stallwatchFixtureLeafSpin(thread) &+ 1 }
    return stallwatchFixtureBeta(depth - 1, thread) &+ 1
}

@inline(never)
func stallwatchFixtureBeta(_ depth: Int, _ thread: TestThread) -> Int {
    if depth == 0 { return stallwatchFixtureLeafSpin(thread) &+ 2 }
    return stallwatchFixtureAlpha(depth - 1, thread) &+ 2
}

/// The function names expected innermost-first for `depth` levels started at alpha.
func expectedFixtureNames(depth: Int) -> [String] {
    var names = ["stallwatchFixtureLeafSpin"]
    // alpha(depth) -> beta(depth-1) -> ... ; the innermost caller of the leaf is at level 0.
    var chain: [String] = []
    for level in 0...depth {
        chain.append(level % 2 == 0 ? "stallwatchFixtureAlpha" : "stallwatchFixtureBeta")
    }
    names.append(contentsOf: chain.reversed())
    return names
}

/// The fixture names found in `stack`, innermost first.
func fixtureNames(in stack: CapturedStack) -> [String] {
    Symbolizer.shared.symbolize(stack).compactMap { frame -> String? in
        guard let s = frame.symbol else { return nil }
        for name in ["stallwatchFixtureLeafSpin", "stallwatchFixtureAlpha", "stallwatchFixtureBeta"] where s.contains(name) {
            return name
        }
        return nil
    }
}

@inline(never)
func stallwatchFixtureCountLoop(_ thread: TestThread) {
    while !thread.shouldStop { thread.counter.add(1, ordering: .relaxed) }
}
