import BlockingWork

// Route handlers that block their pool thread, one function each so a stall report can be checked
// for the handler it blames (not only for the shared work below it).

@inline(never)
func sleepingHandler(milliseconds: Int) { blockInSleep(milliseconds: milliseconds) }

@inline(never)
func computingHandler(milliseconds: Int) { blockOnCPU(milliseconds: milliseconds) }

@inline(never)
func lockingHandler(milliseconds: Int) { blockOnLock(milliseconds: milliseconds) }

@inline(never)
func socketReadingHandler(milliseconds: Int) { blockOnSocketRead(milliseconds: milliseconds) }

@inline(never)
func injectingHandler(kind: String, milliseconds: Int) -> String? { runInjection(kind: kind, milliseconds: milliseconds) }
func asyncInjectingHandler(kind: String, milliseconds: Int) async -> String? {
    await runAsyncInjection(kind: kind, milliseconds: milliseconds)
}
