/// Every symbol source for one module, best first: its own `.symtab`; else a separate debug file
/// found by build id (`/usr/lib/debug/.build-id/ab/cdef….debug`, what Debian's `-dbg` and
/// `-dbgsym` packages install); else MiniDebugInfo (`.gnu_debugdata`, an xz-compressed symbol
/// file that Fedora and others embed); and always its `.dynsym`. Debian's libc has no `.symtab`,
/// so without these its internal functions (`__lll_lock_wait`, `start_thread`) stay anonymous.
package final class ModuleSymbols: Sendable {
    /// The module's own table: its load facts and build id, and `.dynsym` (or `.symtab`) names.
    package let primary: ELFSymbolTable
    /// Fuller tables found elsewhere, searched first.
    private let extra: [ELFSymbolTable]

    /// Where debug files are looked up by build id.
    package static let defaultDebugDirectory = "/usr/lib/debug"
    /// The most MiniDebugInfo may inflate to: such sections hold a symbol table only, a few MiB.
    static let miniDebugInfoLimit = 64 << 20

    /// The symbols of the module at `path`; `nil` when it is not a readable ELF file.
    package init?(path: String, debugDirectory: String = ModuleSymbols.defaultDebugDirectory) {
        guard let primary = ELFSymbolTable(path: path) else { return nil }
        self.primary = primary
        guard !primary.hasFullSymbolTable else {
            extra = []
            return
        }
        if let id = primary.buildID, id.count > 2,
           let debug = ELFSymbolTable(path: "\(debugDirectory)/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"),
           debug.hasFullSymbolTable, debug.buildID == nil || debug.buildID == id {
            extra = [debug]
        } else if let image = primary.withMiniDebugInfo({ try? Compression.xzDecompress($0, limit: Self.miniDebugInfoLimit) }),
                  let bytes = image, let mini = ELFSymbolTable(image: bytes) {
            extra = [mini]
        } else {
            extra = []
        }
        // Decompressing read the whole `.gnu_debugdata` section from the mapping.
        primary.releasePages()
    }

    /// The function containing `address` (in the file's own address space), from the fullest
    /// table that knows one.
    package func lookup(fileAddress address: UInt64) -> (name: String, start: UInt64)? {
        function(fileAddress: address).map { ($0.table.name(at: $0.nameOffset), $0.start) }
    }

    /// The same without reading the name: the table that has it and where (nothing allocated).
    func function(fileAddress address: UInt64) -> (table: ELFSymbolTable, nameOffset: Int, start: UInt64)? {
        for table in extra {
            if let hit = table.function(fileAddress: address) { return (table, hit.nameOffset, hit.start) }
        }
        return primary.function(fileAddress: address).map { (primary, $0.nameOffset, $0.start) }
    }

    /// Hands back the mapped files' pages that lookups read since the last call (see
    /// ``ELFSymbolTable/releasePages()``); the next lookup faults in the few it needs.
    package func releasePages() {
        primary.releasePages()
        for table in extra { table.releasePages() }
    }

    /// Where the names came from, for tests and diagnostics.
    var sources: [String] {
        [primary.hasFullSymbolTable ? "symtab" : "dynsym"] + extra.map { _ in "debug" }
    }
}
