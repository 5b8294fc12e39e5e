/// The name a person wrote for a frame of a Swift async function.
///
/// An async function is compiled into partial functions, one per stretch between suspension
/// points; Swift's demangler names each `(2) await resume partial function for
/// MyService.route() async -> Response`. A frame in one of them — on the machine stack, or a
/// resume point read from the task's async context chain — is the function `route()` itself, and
/// its signature says `async`.
package enum AsyncFunctionName {
    /// `demangled` without the partial-function prefix, and whether it names a partial function.
    package static func clean(_ demangled: String) -> (name: String, isAsync: Bool) {
        // "(<n>) await resume partial function for " or "(<n>) suspend resume partial function for ".
        guard demangled.hasPrefix("("), let close = demangled.firstIndex(of: ")") else { return (demangled, false) }
        let rest = demangled[demangled.index(after: close)...]
        for marker in [" await resume partial function for ", " suspend resume partial function for "]
        where rest.hasPrefix(marker) {
            guard demangled[demangled.index(after: demangled.startIndex)..<close].allSatisfy(\.isNumber) else { break }
            return (String(rest.dropFirst(marker.count)), true)
        }
        return (demangled, false)
    }
}
