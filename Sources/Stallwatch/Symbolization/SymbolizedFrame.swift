import StallwatchReport

/// One return address, resolved to a module and (when the module exports it) a function.
package struct SymbolizedFrame: Sendable, Hashable, Codable {
    /// The raw address.
    package var address: UInt
    /// Path of the module (executable or shared library) holding the address, if any.
    package var module: String?
    /// `address` minus the module's load base: stable across runs, for symbolizing later.
    package var moduleOffset: UInt?
    /// The module's GNU build id (hex), to find the exact binary when symbolizing later.
    package var buildID: String?
    /// The demangled function name, when the module's dynamic symbol table has it.
    package var symbol: String?
    /// The raw (mangled) symbol name.
    package var mangledSymbol: String?
    /// Start address of the function: the identity used to compare stacks "by function".
    package var functionAddress: UInt?
    /// `address` minus the function's start.
    package var symbolOffset: UInt?
    /// `true` for a frame of a Swift async function's partial function (its symbol is the async
    /// function's own name, see ``AsyncFunctionName``); `nil` otherwise.
    package var isAsync: Bool?

    /// A one-line rendering: `symbol + 0x12 (module + 0x3456)` or the raw address.
    package var formatted: String {
        let mod = module.map { ($0.split(separator: "/").last.map(String.init) ?? $0) } ?? "?"
        let modPart = moduleOffset.map { " (\(mod) + 0x\(String($0, radix: 16)))" } ?? ""
        if let symbol {
            return "\(symbol) + \(symbolOffset ?? 0)\(modPart)"
        }
        return "0x\(String(address, radix: 16))\(modPart)"
    }
}

extension SymbolizedFrame {
    /// What a report keeps of this frame.
    package var info: SymbolInfo {
        var info = SymbolInfo(module: module, moduleOffset: moduleOffset.map(UInt64.init), buildID: buildID, symbol: symbol)
        info.isAsync = isAsync
        return info
    }
}
