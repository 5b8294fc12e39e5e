#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The function symbols of one ELF file, from `.symtab` (full, when not stripped) or `.dynsym`.
///
/// `dladdr` sees only exported (dynamic) symbols, so internal Swift functions, closures and static C
/// functions stay anonymous with it; the static symbol table names them. A file on disk is mapped
/// read-only and stays mapped for the life of the table; an in-memory image (MiniDebugInfo's
/// decompressed symbol file) is copied and owned.
///
/// Memory: what is kept is an index of 8 bytes per function (its address and its entry's number in
/// the file's own symbol table); a lookup reads the one entry it lands on, and its name, from the
/// mapping. The mapped pages a build or a lookup brought in are handed back (``releasePages()``):
/// they stay in the page cache and fault back in on the next lookup, so a 120 MB binary no longer
/// keeps its whole `.symtab` resident (+12.5 MiB file-backed, +4.5 MiB for a parsed copy).
package final class ELFSymbolTable: Sendable {
    private let index: SymbolIndex
    private let symbolsOffset: Int   // the symbol table inside the image
    private let symbolEntrySize: Int
    private let stringsOffset: Int   // the string table inside the image
    private let stringsCount: Int
    /// `true` for position-independent files (ET_DYN): symbol values are relative to the load bias.
    let isRelocatable: Bool
    /// Lowest PT_LOAD virtual address (0 for most shared objects and PIEs).
    package let lowestLoadAddress: UInt64
    /// The GNU build id (lowercase hex), which names the exact binary for symbolizing later.
    package let buildID: String?
    /// `true` when the symbols come from `.symtab` (every function), `false` for `.dynsym` (exported only).
    let hasFullSymbolTable: Bool
    /// Where the `.gnu_debugdata` section (MiniDebugInfo: an xz-compressed ELF file holding a
    /// `.symtab`) lies in the image, if the file has one.
    let miniDebugInfoRange: Range<Int>?

    // The image is never written and never released while the table lives; it is shared read-only.
    nonisolated(unsafe) private let image: UnsafeRawBufferPointer
    private let isMapped: Bool
    /// Whether the mapping was read since its pages were last handed back: releasing is then a
    /// system call, otherwise nothing.
    private let touched = Atomic<Bool>(false)

    /// Maps and parses `path`; `nil` when it is not a readable 64-bit ELF file with a symbol table.
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 64 else { return nil }
        let size = Int(st.st_size)
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
        let file = UnsafeRawBufferPointer(start: base, count: size)
        guard let parsed = Self.parse(file) else {
            munmap(base, size)
            return nil
        }
        image = file
        isMapped = true
        (index, symbolsOffset, symbolEntrySize) = (parsed.index, parsed.symbolsOffset, parsed.symbolEntrySize)
        (stringsOffset, stringsCount) = (parsed.stringsOffset, parsed.stringsCount)
        (isRelocatable, lowestLoadAddress, hasFullSymbolTable) = (parsed.relocatable, parsed.lowestLoad, parsed.full)
        miniDebugInfoRange = parsed.miniDebugInfo
        buildID = Self.buildID(file)
        // Building the index read the whole symbol table: none of it is needed resident now.
        touched.store(true, ordering: .relaxed)
        releasePages()
    }

    /// Parses an ELF image held in memory (copied); `nil` when it is not one with a symbol table.
    init?(image bytes: [UInt8]) {
        guard bytes.count > 64 else { return nil }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
        copy.copyBytes(from: bytes)
        let file = UnsafeRawBufferPointer(copy)
        guard let parsed = Self.parse(file) else {
            copy.deallocate()
            return nil
        }
        image = file
        isMapped = false
        (index, symbolsOffset, symbolEntrySize) = (parsed.index, parsed.symbolsOffset, parsed.symbolEntrySize)
        (stringsOffset, stringsCount) = (parsed.stringsOffset, parsed.stringsCount)
        (isRelocatable, lowestLoadAddress, hasFullSymbolTable) = (parsed.relocatable, parsed.lowestLoad, parsed.full)
        miniDebugInfoRange = parsed.miniDebugInfo
        buildID = Self.buildID(file)
    }

    deinit {
        guard let base = image.baseAddress else { return }
        if isMapped {
            munmap(UnsafeMutableRawPointer(mutating: base), image.count)
        } else {
            UnsafeMutableRawPointer(mutating: base).deallocate()
        }
    }

    /// The `.gnu_debugdata` section's bytes, handed to `body` (valid only inside it).
    func withMiniDebugInfo<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T? {
        guard let range = miniDebugInfoRange else { return nil }
        markTouched()
        return body(UnsafeRawBufferPointer(rebasing: image[range]))
    }

    /// The function containing `address` (a value in the file's own address space):
    /// its name and start.
    func lookup(fileAddress address: UInt64) -> (name: String, start: UInt64)? {
        function(fileAddress: address).map { (name(at: $0.nameOffset), $0.start) }
    }

    /// The same, with the name's offset in the string table instead of the name: nothing is
    /// allocated (see ``name(at:)``).
    func function(fileAddress address: UInt64) -> (nameOffset: Int, start: UInt64)? {
        guard let entry = index.entry(atOrBelow: address) else { return nil }
        markTouched()
        let r = Reader(f: image)
        guard let o = r.entry(symbolsOffset, entry, symbolEntrySize), let nameOffset = r.u32(o),
              let value = r.u64(o + 8), let size = r.u64(o + 16), value <= address else { return nil }
        // A sized symbol must contain the address; an unsized one is trusted only nearby.
        if size > 0 ? address - value >= size : address - value > 4096 { return nil }
        return (Int(nameOffset), value)
    }

    /// How many functions the index holds (one per address).
    var count: Int { index.count }

    /// Where the file is mapped (nil for an in-memory image), for tests that read its resident size.
    var mappedAddress: UInt? { isMapped ? image.baseAddress.map { UInt(bitPattern: $0) } : nil }

    /// Hands the mapped file's resident pages back to the kernel when anything read them since the
    /// last call. They are the file's own pages, unmodified (the mapping is read-only): they stay in
    /// the page cache, and a later lookup faults in the few it reads. A lookup running meanwhile on
    /// another thread faults its page back in and reads the same bytes. An in-memory image is the
    /// only copy of its bytes and is kept.
    func releasePages() {
        guard isMapped, touched.load(ordering: .relaxed), touched.exchange(false, ordering: .relaxed),
              let base = image.baseAddress else { return }
        madvise(UnsafeMutableRawPointer(mutating: base), image.count, MADV_DONTNEED)
    }

    private func markTouched() {
        // A load first: the flag is set once per batch of lookups, not written by every lookup.
        if isMapped, !touched.load(ordering: .relaxed) { touched.store(true, ordering: .relaxed) }
    }

    /// The symbol name at `offset` in the string table (without a version suffix).
    func name(at offset: Int) -> String {
        guard offset >= 0, offset < stringsCount, let base = image.baseAddress else { return "" }
        let p = base.advanced(by: stringsOffset + offset).assumingMemoryBound(to: CChar.self)
        var len = strnlen(p, stringsCount - offset)
        if let at = memchr(p, 0x40 /* @ */, len) { len = p.distance(to: at.assumingMemoryBound(to: CChar.self)) }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
    }

    /// Bounds-checked little-endian reads; offsets from the file are untrusted.
    private struct Reader {
        let f: UnsafeRawBufferPointer
        func u16(_ o: Int) -> UInt16? { o >= 0 && o <= f.count - 2 ? f.loadUnaligned(fromByteOffset: o, as: UInt16.self) : nil }
        func u32(_ o: Int) -> UInt32? { o >= 0 && o <= f.count - 4 ? f.loadUnaligned(fromByteOffset: o, as: UInt32.self) : nil }
        func u64(_ o: Int) -> UInt64? { o >= 0 && o <= f.count - 8 ? f.loadUnaligned(fromByteOffset: o, as: UInt64.self) : nil }
        /// A file offset or size that fits the image, as an Int.
        func offset(_ o: Int) -> Int? { u64(o).flatMap { $0 <= UInt64(f.count) ? Int($0) : nil } }
        func entry(_ table: Int, _ index: Int, _ size: Int) -> Int? {
            let (product, overflow) = index.multipliedReportingOverflow(by: size)
            return overflow ? nil : table.addingReportingOverflow(product).overflow ? nil : table + product
        }
    }

    /// Reads NT_GNU_BUILD_ID from the PT_NOTE segments.
    private static func buildID(_ f: UnsafeRawBufferPointer) -> String? {
        let r = Reader(f: f)
        guard let phoff = r.offset(0x20), let phentsize = r.u16(0x36), let phnum = r.u16(0x38) else { return nil }
        for i in 0..<Int(phnum) {
            guard let ph = r.entry(phoff, i, Int(phentsize)), r.u32(ph) == 4 /* PT_NOTE */,
                  let off = r.offset(ph + 8), let size = r.offset(ph + 32) else { continue }
            var o = off
            let end = min(off + size, f.count)
            while o + 12 <= end, let nameSize = r.u32(o), let descSize = r.u32(o + 4), let type = r.u32(o + 8) {
                let name = o + 12
                let desc = name + (Int(nameSize) + 3) & ~3
                let next = desc + (Int(descSize) + 3) & ~3
                guard next <= end, next > o else { break }
                if type == 3 /* NT_GNU_BUILD_ID */, nameSize == 4, f[name] == 0x47, f[name + 1] == 0x4e, f[name + 2] == 0x55 {
                    // Hex by hand: String(format:) goes through Foundation's formatter, whose code
                    // pages (megabytes, measured) would become resident with the first report.
                    let digits = Array("0123456789abcdef".utf8)
                    var hex: [UInt8] = []
                    hex.reserveCapacity(2 * Int(descSize))
                    for i in desc..<desc + Int(descSize) { hex += [digits[Int(f[i] >> 4)], digits[Int(f[i] & 0xf)]] }
                    return String(decoding: hex, as: UTF8.self)
                }
                o = next
            }
        }
        return nil
    }

    private struct Parsed {
        var index: SymbolIndex
        var symbolsOffset: Int
        var symbolEntrySize: Int
        var stringsOffset: Int
        var stringsCount: Int
        var relocatable: Bool
        var lowestLoad: UInt64
        var full: Bool
        var miniDebugInfo: Range<Int>?
    }

    private static func parse(_ f: UnsafeRawBufferPointer) -> Parsed? {
        let r = Reader(f: f)
        guard f.count > 64, f[0] == 0x7f, f[1] == 0x45, f[2] == 0x4c, f[3] == 0x46, f[4] == 2 /* 64-bit */ else { return nil }
        guard let type = r.u16(16), let phoff = r.offset(0x20), let shoff = r.offset(0x28),
              let phentsize = r.u16(0x36), let phnum = r.u16(0x38),
              let shentsize = r.u16(0x3a), let shnum = r.u16(0x3c), let shstrndx = r.u16(0x3e) else { return nil }
        var lowest = UInt64.max
        for i in 0..<Int(phnum) {
            if let o = r.entry(phoff, i, Int(phentsize)), r.u32(o) == 1, let vaddr = r.u64(o + 16) {
                lowest = min(lowest, vaddr & ~0xfff)
            }
        }
        if lowest == .max { lowest = 0 }
        func section(_ i: Int) -> Int? { r.entry(shoff, i, Int(shentsize)) }
        // Prefer the full static table; fall back to the dynamic one.
        var chosen: SymbolSection?
        for wanted: UInt32 in [2 /* SHT_SYMTAB */, 11 /* SHT_DYNSYM */] where chosen == nil {
            for i in 0..<Int(shnum) {
                guard let o = section(i), r.u32(o + 4) == wanted, let off = r.offset(o + 24), let size = r.offset(o + 32),
                      let link = r.u32(o + 40), let ent = r.u64(o + 56), ent >= 24, ent <= 4096,
                      let lo = section(Int(link)), let soff = r.offset(lo + 24), let ssize = r.offset(lo + 32),
                      soff + ssize <= f.count, off + size <= f.count else { continue }
                chosen = SymbolSection(offset: off, size: size, entrySize: Int(ent), stringsOffset: soff, stringsSize: ssize,
                                       full: wanted == 2)
                break
            }
        }
        guard let c = chosen else { return nil }
        return Parsed(index: buildIndex(f, c), symbolsOffset: c.offset, symbolEntrySize: c.entrySize,
                      stringsOffset: c.stringsOffset, stringsCount: c.stringsSize, relocatable: type == 3 /* ET_DYN */,
                      lowestLoad: lowest, full: c.full,
                      miniDebugInfo: sectionRange(named: ".gnu_debugdata", r: r, count: Int(shnum), names: Int(shstrndx), section: section))
    }

    /// Where the chosen symbol table and its string table lie in the image.
    private struct SymbolSection {
        var offset: Int
        var size: Int
        var entrySize: Int
        var stringsOffset: Int
        var stringsSize: Int
        var full: Bool

        /// Calls `body(entry, value)` for every function symbol with an address, in file order.
        func forEachFunction(_ f: UnsafeRawBufferPointer, _ body: (Int, UInt64) -> Void) {
            var o = offset, entry = 0
            while o + 24 <= offset + size {
                if f[o + 4] & 0xf == 2 /* STT_FUNC */ {
                    let value = f.loadUnaligned(fromByteOffset: o + 8, as: UInt64.self)
                    if value != 0 { body(entry, value) }
                }
                o += entrySize
                entry += 1
            }
        }
    }

    /// The function symbols sorted by address, one per address. Two passes over the table (the
    /// first only finds the address span), so the index is allocated once at its final size and
    /// sorted as plain integers; nothing of the entries is copied but their address and number.
    private static func buildIndex(_ f: UnsafeRawBufferPointer, _ c: SymbolSection) -> SymbolIndex {
        var count = 0, low = UInt64.max, high: UInt64 = 0
        c.forEachFunction(f) { _, value in
            count += 1
            low = min(low, value)
            high = max(high, value)
        }
        guard count > 0 else { return .packed(base: 0, keys: []) }
        let strings = UnsafeRawBufferPointer(rebasing: f[c.stringsOffset..<c.stringsOffset + c.stringsSize])
        let aliases = AliasRanking(f: f, symbols: c, strings: strings)
        if high - low <= UInt64(UInt32.max), c.size / c.entrySize <= Int(UInt32.max) {
            var keys: [UInt64] = []
            keys.reserveCapacity(count)
            c.forEachFunction(f) { entry, value in keys.append((value - low) << 32 | UInt64(entry)) }
            keys.sort()
            let kept = aliases.keepBest(&keys, address: { $0 >> 32 }, entry: { Int($0 & 0xffff_ffff) })
            return .packed(base: low, keys: Array(keys[..<kept]))
        }
        var symbols: [WideSymbol] = []
        symbols.reserveCapacity(count)
        c.forEachFunction(f) { entry, value in symbols.append(WideSymbol(value: value, entry: entry)) }
        symbols.sort { ($0.value, $0.entry) < ($1.value, $1.entry) }
        let kept = aliases.keepBest(&symbols, address: \.value, entry: \.entry)
        return .wide(Array(symbols[..<kept]))
    }

    /// One symbol per address: aliases share an address (`__pthread_mutex_lock`, the
    /// internal `__GI___pthread_mutex_lock`, `pthread_mutex_lock@@GLIBC_2.2.5`), and the name
    /// people know is the sized, global one in its default version. Ranked only where there are
    /// ties: most addresses have one name. Among equal ranks the lowest name offset wins, so the
    /// same file always gives the same name.
    private struct AliasRanking {
        let f: UnsafeRawBufferPointer
        let symbols: SymbolSection
        let strings: UnsafeRawBufferPointer

        private func rank(_ entry: Int) -> (rank: Int, name: Int) {
            let o = symbols.offset + entry * symbols.entrySize
            let name = Int(f.loadUnaligned(fromByteOffset: o, as: UInt32.self))
            let size = f.loadUnaligned(fromByteOffset: o + 16, as: UInt64.self)
            let binding = f[o + 4] >> 4   // STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2
            let rank = (size > 0 ? 8 : 0) + (binding == 1 || binding == 2 ? 4 : 0)
                + (ELFSymbolTable.isOldVersion(name, strings) ? 0 : 2) + (ELFSymbolTable.hasPrefix(name, "__GI_", strings) ? 0 : 1)
            return (rank, name)
        }

        private func better(_ a: Int, than b: Int) -> Bool {
            let (ra, rb) = (rank(a), rank(b))
            return ra.rank > rb.rank || (ra.rank == rb.rank && ra.name < rb.name)
        }

        /// Keeps the best alias of each address at the front of `sorted` (sorted by address);
        /// returns how many there are.
        func keepBest<Key>(_ sorted: inout [Key], address: (Key) -> UInt64, entry: (Key) -> Int) -> Int {
            var kept = 0, i = 0
            while i < sorted.count {
                var best = sorted[i]
                var j = i + 1
                while j < sorted.count, address(sorted[j]) == address(best) {
                    if better(entry(sorted[j]), than: entry(best)) { best = sorted[j] }
                    j += 1
                }
                sorted[kept] = best
                kept += 1
                i = j
            }
            return kept
        }
    }

    /// Whether the name at `offset` starts with `prefix` (glibc's `__GI_` marks internal aliases).
    private static func hasPrefix(_ offset: Int, _ prefix: StaticString, _ strings: UnsafeRawBufferPointer) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard offset >= 0, offset + count <= strings.count else { return false }
        return (0..<count).allSatisfy { strings[offset + $0] == prefix.utf8Start[$0] }
    }

    /// `name@VERSION` (one @: an old version), as opposed to `name` or `name@@VERSION` (the default).
    private static func isOldVersion(_ offset: Int, _ strings: UnsafeRawBufferPointer) -> Bool {
        guard offset >= 0, offset < strings.count, let base = strings.baseAddress else { return false }
        let name = base.advanced(by: offset)
        let length = strnlen(name.assumingMemoryBound(to: CChar.self), strings.count - offset)
        guard let at = memchr(name, 0x40 /* @ */, length) else { return false }
        let next = name.distance(to: UnsafeRawPointer(at)) + 1
        return next >= length || strings[offset + next] != 0x40
    }

    private static func sectionRange(named wanted: String, r: Reader, count: Int, names: Int,
                                     section: (Int) -> Int?) -> Range<Int>? {
        guard let n = section(names), let namesOffset = r.offset(n + 24), let namesSize = r.offset(n + 32),
              namesOffset + namesSize <= r.f.count else { return nil }
        let target = Array(wanted.utf8) + [0]
        for i in 0..<count {
            guard let o = section(i), r.u32(o + 4) == 1 /* SHT_PROGBITS */, let nameIndex = r.u32(o),
                  Int(nameIndex) + target.count <= namesSize,
                  let off = r.offset(o + 24), let size = r.offset(o + 32), off + size <= r.f.count else { continue }
            let start = namesOffset + Int(nameIndex)
            if (0..<target.count).allSatisfy({ r.f[start + $0] == target[$0] }) { return off..<off + size }
        }
        return nil
    }
}

/// Function symbols sorted by address, one per address, each as its entry's number in the file's
/// symbol table.
private enum SymbolIndex: Sendable {
    /// `(value - base) << 32 | entry`, 8 bytes a symbol: every value lies within 4 GiB above `base`
    /// and the table has fewer than 2^32 entries, as in every real executable and library.
    case packed(base: UInt64, keys: [UInt64])
    /// Anything else (the file is untrusted): value and entry side by side.
    case wide([WideSymbol])

    var count: Int {
        switch self {
        case .packed(_, let keys): keys.count
        case .wide(let symbols): symbols.count
        }
    }

    /// The entry of the last function starting at or below `address`.
    func entry(atOrBelow address: UInt64) -> Int? {
        switch self {
        case .packed(let base, let keys):
            guard address >= base else { return nil }
            // Past 4 GiB above the base only the last function can be the candidate (and its size rejects it).
            let key = min(address - base, UInt64(UInt32.max)) << 32 | 0xffff_ffff
            let i = Self.countNotAbove(keys.count) { keys[$0] <= key }
            return i > 0 ? Int(keys[i - 1] & 0xffff_ffff) : nil
        case .wide(let symbols):
            let i = Self.countNotAbove(symbols.count) { symbols[$0].value <= address }
            return i > 0 ? symbols[i - 1].entry : nil
        }
    }

    /// The number of leading elements for which `isNotAbove` holds (it holds for a prefix).
    private static func countNotAbove(_ count: Int, _ isNotAbove: (Int) -> Bool) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if isNotAbove(mid) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

private struct WideSymbol: Sendable {
    var value: UInt64
    var entry: Int
}
