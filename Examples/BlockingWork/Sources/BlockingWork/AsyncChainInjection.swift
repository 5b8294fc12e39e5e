// Labelled stalls under an async call chain: each level awaits a real suspension, then the next
// level, so the levels above the computing one are its callers only in the task's async contexts.
// The matrix expects them named in the blamed stack, innermost first (`asyncChainFunctions`).

/// The async levels, outermost first; a chain of depth d runs the last d of them.
private let levels = ["chainLevel5", "chainLevel4", "chainRoute", "chainService", "chainRepository"]

/// For each async-chain kind, the functions the blamed stack must name in this order, innermost
/// first: the computing function, then each async caller (Tests/EndToEnd/matrix.py keeps the same).
public let asyncChainFunctions: [String: [String]] = Dictionary(uniqueKeysWithValues: [1, 3, 5].map { depth in
    ("async\(depth)", ["computeUnderAsyncChain"] + levels.suffix(depth).reversed())
})

/// Runs an injection kind that needs an async caller: an async-chain kind (`async1`, `async3`,
/// `async5`) or the pool deadlock (`pooldeadlock`, PoolDeadlockInjection.swift); nil for any other kind.
public func runAsyncInjection(kind: String, milliseconds: Int) async -> String? {
    if kind == poolDeadlockKind { return await runPoolDeadlockInjection(milliseconds: milliseconds) }
    guard asyncChainFunctions[kind] != nil, let depth = Int(kind.dropFirst("async".count)) else { return nil }
    let job = ChainJob(kind: kind, milliseconds: milliseconds)
    switch depth {
    case 5: return await chainLevel5(job)
    case 3: return await chainRoute(job)
    default: return await chainRepository(job)
    }
}

private struct ChainJob: Sendable {
    var kind: String
    var milliseconds: Int
}

/// A real suspension: the code after it is a resumed partial function.
private func suspend() async {
    try? await Task.sleep(for: .milliseconds(1))
}

@inline(never)
private func chainLevel5(_ job: ChainJob) async -> String {
    await suspend()
    return await chainLevel4(job)
}

@inline(never)
private func chainLevel4(_ job: ChainJob) async -> String {
    await suspend()
    return await chainRoute(job)
}

@inline(never)
private func chainRoute(_ job: ChainJob) async -> String {
    await suspend()
    return await chainService(job)
}

@inline(never)
private func chainService(_ job: ChainJob) async -> String {
    await suspend()
    return await chainRepository(job)
}

@inline(never)
private func chainRepository(_ job: ChainJob) async -> String {
    await suspend()
    return timedInjection(kind: job.kind, milliseconds: job.milliseconds) { computeUnderAsyncChain(milliseconds: job.milliseconds) }
}

/// The CPU-bound work at the bottom of the chain.
@inline(never)
public func computeUnderAsyncChain(milliseconds: Int) {
    blockOnCPU(milliseconds: milliseconds)
}
