import Stallwatch
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// Names the frames a report could only give as module + offset, where a symbol file for that
/// module's build id is installed now — e.g. a `-dbgsym` package installed after the stall. The
/// build id must match: a module updated since the report is never used to name its frames.
enum LateSymbolization {
    static func named(_ report: StallReport, debugDirectory: String = ModuleSymbols.defaultDebugDirectory) -> StallReport {
        var r = report
        var tables: [String: ModuleSymbols?] = [:]
        func symbols(_ module: String, _ id: String) -> ModuleSymbols? {
            let key = module + "\u{0}" + id
            if let known = tables[key] { return known }
            let found = ModuleSymbols(path: module, debugDirectory: debugDirectory).flatMap { $0.primary.buildID == id ? $0 : nil }
            tables[key] = found
            return found
        }
        for i in r.blamedStack.indices where r.blamedStack[i].symbol == nil {
            let f = r.blamedStack[i]
            guard let module = f.module, let id = f.buildID, let offset = f.moduleOffset?.value,
                  let table = symbols(module, id) else { continue }
            // The offset is from the module's lowest mapping, which sits at the file's lowest load
            // address. A blamed frame's address is its function's start where it was known, looked
            // up as it is; else a raw frame address, looked up where ``ReturnAddress`` says.
            let at = offset &+ table.primary.lowestLoadAddress
            let inside = ReturnAddress.lookup(at, innermost: i == 0)
            let hit = table.lookup(fileAddress: at) ?? (inside != at ? table.lookup(fileAddress: inside) : nil)
            if let hit {
                let (symbol, isAsync) = AsyncFunctionName.clean(Demangler.demangle(hit.name))
                r.blamedStack[i].symbol = symbol
                if isAsync { r.blamedStack[i].isAsync = true }
            }
        }
        return r
    }
}
