import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import Synchronization

/// Resolves raw addresses to modules and function names, off the hot path.
///
/// Uses `dladdr` (dynamic symbols; SwiftPM links executables with `--export-dynamic`), each module's
/// static symbol table, and for stripped system libraries their debug files or MiniDebugInfo
/// (`ModuleSymbols`); it demangles
/// Swift names through the runtime's `swift_demangle` and C++ names through `__cxa_demangle`.
/// Results are cached per address. Never call it from a signal handler or while threads are held.
package final class Symbolizer: Sendable {
    /// A process-wide instance with a shared cache.
    package static let shared = Symbolizer()

    private let cache = Mutex<[UInt: SymbolizedFrame]>([:])
    /// Names already read and demangled, by function: a new address in a known function (the PC
    /// of a CPU-bound loop moves) reuses them instead of reading and demangling again.
    private let functionNames = Mutex<[FunctionKey: FunctionName]>([:])
    /// Module paths by load base, so that a new address in a known module copies no path.
    private let modulePaths = Mutex<[UInt: String]>([:])
    private let tables = Mutex<[String: ModuleSymbols]>([:])
    /// Modules whose symbols could not be read, and when: tried again later — the
    /// cause may pass (no file descriptor free, a file being replaced), and a failure remembered
    /// for the life of the process would leave every later stall unnamed.
    /// Retried after `retryAfter`.
    private let failures = Mutex<[String: MonotonicInstant]>([:])
    private let retryAfter: Duration
    /// Addresses asked for (``symbolize(_:)``, cached or not): lets a test see that a report
    /// resolves each distinct frame address once.
    private let lookupCount = Atomic<Int>(0)

    /// Where the kernel mapped the vDSO (0 when it did not).
    private static let vdsoBase = UInt(sw_vdso_base())

    /// Creates a symbolizer with an empty cache.
    package init() {
        retryAfter = .seconds(5)
    }

    /// For tests: how long a module whose symbols could not be read is left alone.
    init(retryAfter: Duration) {
        self.retryAfter = retryAfter
    }

    /// Resolves one address.
    package func symbolize(_ address: UInt) -> SymbolizedFrame {
        lookupCount.add(1, ordering: .relaxed)
        if let hit = cache.withLock({ $0[address] }) { return hit }
        let (frame, complete) = resolve(address)
        // A frame named without its module's table (it could not be read just now) is not kept:
        // the next stall asks again.
        guard complete else { return frame }
        cache.withLock { c in
            if c.count > 100_000 { c.removeAll(keepingCapacity: true) }
            c[address] = frame
        }
        return frame
    }

    /// The path of the module holding `address`, without reading any symbol table (the loader's
    /// own list): for the watchdog's scans, which ask only whether a frame lies in libdispatch.
    package func modulePath(of address: UInt) -> String? {
        if let hit = cache.withLock({ $0[address] }) { return hit.module }
        var info = sw_symbol_info_t()
        guard sw_symbol_lookup(UInt64(address), &info) != 0, let name = info.module_path else { return nil }
        return modulePath(name, base: UInt(info.module_base))
    }

    /// How many addresses were asked for since this symbolizer was made.
    var lookups: Int { lookupCount.load(ordering: .relaxed) }

    /// Resolves the frame at `address` of a stack, `innermost` for its first frame: looked up where
    /// ``ReturnAddress`` says, the result's address and offsets then given for `address` itself.
    package func symbolize(_ address: UInt, innermost: Bool) -> SymbolizedFrame {
        let at = ReturnAddress.lookup(address, innermost: innermost)
        var f = symbolize(at)
        guard at != address else { return f }
        f.address = address
        f.symbolOffset = f.symbolOffset.map { $0 &+ (address &- at) }
        f.moduleOffset = f.moduleOffset.map { $0 &+ (address &- at) }
        return f
    }

    /// Resolves every frame of a stack (``symbolize(_:innermost:)``: an async frame, see
    /// ``CapturedStack/asyncFrames``, resolves to its resume function as a return address does).
    /// Afterwards the symbol files' pages the lookups read are handed back (``releaseMappedPages()``).
    package func symbolize(_ stack: CapturedStack) -> [SymbolizedFrame] {
        defer { releaseMappedPages() }
        return stack.frames.enumerated().map { i, a in symbolize(a, innermost: i == 0) }
    }

    /// Hands back the resident pages of the mapped symbol files that lookups read since the last
    /// call: they stay in the page cache, and later lookups fault in the few they read. Without it a
    /// process keeps every symbol-table page it ever looked at. Cheap when nothing was
    /// read (cached frames read nothing): one atomic load per loaded module, no system call. Done
    /// under the lock, so it allocates nothing.
    package func releaseMappedPages() {
        tables.withLock { tables in
            for table in tables.values { table.releasePages() }
        }
    }

    /// Loads the main executable's symbol table now, so that the first stall's report does not wait
    /// for it: reading it took 50–130 ms for the 150 MB debug Vapor example, late by as much as the
    /// event of the first stall after start (the matrix's first-stall rows). Its memory is paid at
    /// start instead of at the first report: an index of 8 bytes per function, the file's pages
    /// handed back once it is built.
    func preloadMainExecutable() {
        let entry = sw_main_entry()
        guard entry != 0 else { return }
        _ = symbolize(UInt(entry))
        releaseMappedPages()
    }

    /// Libraries nearly every report's stack passes through, each named by one function of it:
    /// libc (a system call), the Swift runtime, its concurrency runtime and libdispatch (pool jobs).
    static let runtimeLibraryFunctions = ["getpid", "swift_retain", "swift_job_run", "dispatch_async"]

    /// Loads the symbol tables of the libraries in ``runtimeLibraryFunctions`` that this process
    /// has loaded: libc's and libswiftCore's took 16–33 ms each at the first report, a round
    /// late by as much (the first stall event after start came 50–80 ms late). Indexes of a few
    /// hundred KiB, paid at start instead of at the first report.
    func preloadRuntimeLibraries() {
        for name in Self.runtimeLibraryFunctions {
            guard let function = LoadedSymbols.address(of: name) else { continue }
            _ = symbolize(UInt(bitPattern: function))
        }
        releaseMappedPages()
    }

    /// The modules whose symbol tables are loaded.
    var loadedModules: [String] { tables.withLock { Array($0.keys) } }

    /// Their tables, for tests.
    var loadedTables: [ModuleSymbols] { tables.withLock { Array($0.values) } }

    /// A multi-line rendering of a stack, innermost first.
    package func describe(_ stack: CapturedStack) -> String {
        symbolize(stack).enumerated().map { i, f in "#\(i) \(f.formatted)" }.joined(separator: "\n")
    }

    /// The frame, and whether every source that should name it could be read.
    private func resolve(_ address: UInt) -> (SymbolizedFrame, complete: Bool) {
        var info = sw_symbol_info_t()
        var frame = SymbolizedFrame(address: address)
        guard sw_symbol_lookup(UInt64(address), &info) != 0 else { return (frame, true) }
        if let name = info.module_path { frame.module = modulePath(name, base: UInt(info.module_base)) }
        if info.module_base != 0 { frame.moduleOffset = address &- UInt(info.module_base) }
        if let sname = info.symbol, info.symbol_address != 0 {
            let start = UInt(info.symbol_address)
            let names = functionName(FunctionKey(start: start, fromTable: false), module: frame.module) { String(cString: sname) }
            frame.mangledSymbol = names.mangled
            frame.symbol = names.symbol
            frame.isAsync = names.isAsync ? true : nil
            frame.functionAddress = start
            frame.symbolOffset = address &- start
        }
        // dladdr names only exported symbols; the static table also names internal functions.
        // The vDSO has no file ("linux-vdso.so.1" is only its name): its table was tried again every
        // 5 s (allocating each time), as if the failure could pass. Other modules may be
        // named by a relative path: the main executable is named as it was started.
        if let path = frame.module, info.module_base != 0, UInt(info.module_base) != Self.vdsoBase {
            guard let table = table(for: path) else { return (frame, false) }
            frame.buildID = table.primary.buildID
            let bias = table.primary.isRelocatable ? UInt64(info.module_base) &- table.primary.lowestLoadAddress : 0
            let fileAddress = UInt64(address) &- bias
            if let hit = table.function(fileAddress: fileAddress) {
                let start = UInt(hit.start &+ bias)
                if frame.functionAddress == nil || start >= (frame.functionAddress ?? 0) {
                    let names = functionName(FunctionKey(start: start, fromTable: true), module: path) {
                        hit.table.name(at: hit.nameOffset)
                    }
                    frame.mangledSymbol = names.mangled
                    frame.symbol = names.symbol
                    frame.isAsync = names.isAsync ? true : nil
                    frame.functionAddress = start
                    frame.symbolOffset = address &- start
                }
            }
        }
        return (frame, true)
    }

    /// A function's names as one source (the dynamic symbols, or the module's tables) gives them.
    private struct FunctionKey: Hashable {
        var start: UInt
        var fromTable: Bool
    }

    private struct FunctionName {
        var module: String?
        var mangled: String
        var symbol: String
        var isAsync: Bool
    }

    /// The names of the function at `key`, read by `mangled` and demangled only the first time.
    /// A module loaded since at the same address (another path) is read again.
    private func functionName(_ key: FunctionKey, module: String?, mangled: () -> String) -> FunctionName {
        if let known = functionNames.withLock({ $0[key] }), known.module == module { return known }
        let name = mangled()
        let (symbol, isAsync) = AsyncFunctionName.clean(Demangler.demangle(name))
        let made = FunctionName(module: module, mangled: name, symbol: symbol, isAsync: isAsync)
        functionNames.withLock { names in
            if names.count > 100_000 { names.removeAll(keepingCapacity: true) }
            names[key] = made
        }
        return made
    }

    /// The path of the module loaded at `base`, copied only when it is new there.
    private func modulePath(_ path: UnsafePointer<CChar>, base: UInt) -> String {
        if let known = modulePaths.withLock({ $0[base] }), known.withCString({ strcmp($0, path) == 0 }) { return known }
        let made = String(cString: path)
        modulePaths.withLock { $0[base] = made }
        return made
    }

    private func table(for path: String) -> ModuleSymbols? {
        if let known = tables.withLock({ $0[path] }) { return known }
        let now = MonotonicClock.now()
        if let failed = failures.withLock({ $0[path] }), now - failed < retryAfter { return nil }
        guard let table = ModuleSymbols(path: path) else {
            failures.withLock { $0[path] = now }
            return nil
        }
        tables.withLock { $0[path] = table }
        failures.withLock { _ = $0.removeValue(forKey: path) }
        return table
    }
}

extension SymbolizedFrame {
    init(address: UInt) {
        self.init(address: address, module: nil, moduleOffset: nil, buildID: nil, symbol: nil, mangledSymbol: nil,
                  functionAddress: nil, symbolOffset: nil)
    }
}
