/// Names from a report (symbols, thread names, module paths) made safe to print: control
/// characters become visible escapes. A report is data from a process, and a symbol or thread name
/// holding `ESC [2J` would otherwise clear the reader's terminal, or hide a line behind a
/// carriage return or a right-to-left override.
package enum TerminalSafeText {
    /// `text` with C0 and C1 controls, DEL, bidirectional overrides and backslashes escaped
    /// (`\x1b`, `\u{202e}`, `\\`), everything else unchanged.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if scalar == "\\" {
                out += "\\\\"
            } else if needsEscape(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += scalar.value <= 0xff ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1f, 0x7f...0x9f: return true
        case 0x200e, 0x200f, 0x202a...0x202e, 0x2066...0x2069: return true   // direction marks and overrides
        case 0x5c: return true                                               // "\", so escapes stay unambiguous
        default: return false
        }
    }
}
