import Foundation
import Glibc
import Testing
@testable import Stallwatch

@Suite("ELF symbol table: a compact index over the mapped file", .serialized)
struct ELFSymbolTableTests {
    /// This test binary: SwiftPM links it unstripped, so it has a full `.symtab`.
    private static func executable() throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    /// Every function symbol of `path` with an address, per binutils' readelf: address → names (aliases) and size.
    private static func readelfFunctions(_ path: String) throws -> [UInt64: (names: Set<String>, size: UInt64)] {
        let out = Pipe()
        let readelf = Process()
        readelf.executableURL = URL(fileURLWithPath: "/usr/bin/readelf")
        readelf.arguments = ["-sW", "--symbols", path]
        readelf.standardOutput = out
        try readelf.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        readelf.waitUntilExit()
        var functions: [UInt64: (names: Set<String>, size: UInt64)] = [:]
        var inSymtab = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("Symbol table") { inSymtab = line.contains("'.symtab'") }
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            // Num: Value Size Type Bind Vis Ndx Name
            guard inSymtab, f.count >= 8, f[3] == "FUNC", let value = UInt64(f[1], radix: 16), value != 0,
                  let size = UInt64(f[2]) ?? UInt64(f[2].dropFirst(2), radix: 16) else { continue }
            let name = String(f[7].split(separator: "@", maxSplits: 1).first ?? f[7])
            var function = functions[value] ?? ([], size)
            function.names.insert(name)
            function.size = max(function.size, size)
            functions[value] = function
        }
        return functions
    }

    @Test("every sized function of this binary is found from inside it, by its own name or an alias")
    func matchesReadelf() throws {
        let path = try Self.executable()
        let table = try #require(ELFSymbolTable(path: path))
        #expect(table.hasFullSymbolTable)
        let functions = try Self.readelfFunctions(path)
        try #require(functions.count > 1000, "readelf listed \(functions.count) functions")
        #expect(table.count == functions.count, "one entry per address")
        var checked = 0
        for (value, function) in functions where function.size > 0 {
            for address in [value, value + function.size / 2, value + function.size - 1] {
                let hit = table.lookup(fileAddress: address)
                // readelf truncates nothing with -W; readelf's names drop the version as ours do.
                #expect(hit?.start == value && function.names.contains(hit?.name ?? ""),
                        "\(String(value, radix: 16))+\(address - value): \(String(describing: hit)) vs \(function.names)")
                checked += 1
            }
        }
        #expect(checked > 3000)
        #expect(table.lookup(fileAddress: 0) == nil)
    }

    @Test("the file's pages are not kept resident: built, then read by lookups, then handed back")
    func handsPagesBack() throws {
        let table = try #require(ELFSymbolTable(path: try Self.executable()))
        let mapping = try #require(table.mappedAddress)
        #expect(try Self.resident(mapping) == 0, "after the index was built")
        let functions = try Self.readelfFunctions(try Self.executable())
        var named = 0
        for value in functions.keys.prefix(2000) where table.lookup(fileAddress: value) != nil { named += 1 }
        #expect(named == min(2000, functions.count))
        #expect(try Self.resident(mapping) > 0, "lookups read the symbol and string tables")
        table.releasePages()
        #expect(try Self.resident(mapping) == 0, "after releasePages")
        // Still correct after the pages went: they fault back in from the page cache.
        for value in functions.keys.prefix(200) {
            #expect(table.lookup(fileAddress: value)?.start == value)
        }
    }

    @Test("symbolizing a stack hands back the symbol files' pages it read")
    func symbolizerReleases() throws {
        let symbolizer = Symbolizer()
        symbolizer.preloadMainExecutable()
        let address = UInt(bitPattern: dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_demangle"))
        try #require(address != 0)
        let frames = symbolizer.symbolize(CapturedStack(thread: ThreadID.current, frames: [address + 4], unwinder: .framePointer))
        #expect(frames.first?.symbol == "swift_demangle")
        #expect(symbolizer.loadedModules.count == 2)
        for table in symbolizer.loadedTables {
            if let mapping = table.primary.mappedAddress { #expect(try Self.resident(mapping) == 0, "\(symbolizer.loadedModules)") }
        }
    }

    /// The `Rss:` of the mapping that starts at `address`, KiB, from /proc/self/smaps.
    private static func resident(_ address: UInt) throws -> Int {
        // Read to the end: Foundation's String(contentsOfFile:) stops after the first read of a /proc file.
        let fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SmapsError(description: "cannot open /proc/self/smaps") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        let smaps = String(decoding: bytes, as: UTF8.self)
        let start = String(address, radix: 16)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), line[..<dash].allSatisfy(\.isHexDigit) {
                inside = line[..<dash].drop { $0 == "0" } == start.drop { $0 == "0" }
            } else if inside, line.hasPrefix("Rss:") {
                return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
            }
        }
        throw SmapsError(description: "no mapping at \(start) in /proc/self/smaps")
    }

    struct SmapsError: Error, CustomStringConvertible { var description: String }
}
