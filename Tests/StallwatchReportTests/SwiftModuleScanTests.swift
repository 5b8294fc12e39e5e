import StallwatchReport
import Testing

/// `ServiceFrames.swiftModule(of:)` walks the symbol by index (issue 19: no copy of its characters);
/// it must answer exactly as the character-array version it replaced, kept here as the reference.
@Suite struct SwiftModuleScanTests {
    private func reference(_ symbol: String) -> String? {
        let characters = Array(symbol)
        var depth = 0
        var start = 0
        var i = 0
        while i < characters.count {
            switch characters[i] {
            case "(", "<", "[": depth += 1
            case ">" where i > 0 && characters[i - 1] == "-": break
            case ")", ">", "]": depth = max(0, depth - 1)
            case " " where depth == 0 && i + 3 < characters.count
                && characters[i + 1] == "i" && characters[i + 2] == "n" && characters[i + 3] == " ":
                start = i + 4
            default: break
            }
            i += 1
        }
        depth = 0
        var word = ""
        i = start
        while i < characters.count {
            let c = characters[i]
            switch c {
            case "(", "<", "[": depth += 1; word = ""
            case ">" where i > 0 && characters[i - 1] == "-": word = ""
            case ")", ">", "]": depth = max(0, depth - 1); word = ""
            case ".":
                if depth == 0, !word.isEmpty { return word }
                word = ""
            default:
                if depth == 0, c == "_" || c.isLetter || (c.isNumber && !word.isEmpty) { word.append(c) } else { word = "" }
            }
            i += 1
        }
        let rest = String(characters[start...])
        if start > 0, !rest.isEmpty, rest.allSatisfy({ $0 == "_" || $0.isLetter || $0.isNumber }) { return rest }
        return nil
    }

    @Test func answersAsTheReferenceOnRandomSymbols() {
        let pieces = ["a", "Vapor", "_x", "1", ".", " in ", " ", "(", ")", "<", ">", "->", "[", "]", "-", ":", "é", "in", "n "]
        var state: UInt64 = 0x9E3779B97F4A7C15
        for _ in 0..<5000 {
            var symbol = ""
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let count = Int((state >> 33) % 16)
            for _ in 0..<count {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                symbol += pieces[Int((state >> 33) % UInt64(pieces.count))]
            }
            #expect(ServiceFrames.swiftModule(of: symbol) == reference(symbol), "\(symbol)")
        }
    }

    @Test func anArrowRightBeforeTheOwnerIsNotABracket() {
        for symbol in ["f() -> in X.y", "a -> b in Mod", "(x) in ->Mod.f", " in Mod", "x in ", "x in M"] {
            #expect(ServiceFrames.swiftModule(of: symbol) == reference(symbol), "\(symbol)")
        }
    }
}
