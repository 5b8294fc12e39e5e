import Glibc

/// The function symbols of one ELF file, from `.symtab` (full, when not stripped) or `.dynsym`.
///
/// `dladdr` sees only exported (dynamic) symbols, so internal Swift functions, closures and static C
/// functions stay anonymous with it; the static symbol table names them. A file on disk is mapped
/// read-only and stays mapped for the life of the table; an in-memory image (MiniDebugInfo's
/// decompressed symbol file) is copied and owned.
package final class ELFSymbolTable: Sendable {
    private struct Symbol: Sendable {
        let value: UInt64
        let size: UInt64
        let nameOffset: Int
        /// STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2: among aliases, a global name is the one people know;
        /// then the default version, then any but glibc's internal `__GI_` one.
        let binding: UInt8
    }

    private let symbols: [Symbol]
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
        (symbols, stringsOffset, stringsCount) = (parsed.symbols, parsed.stringsOffset, parsed.stringsCount)
        (isRelocatable, lowestLoadAddress, hasFullSymbolTable) = (parsed.relocatable, parsed.lowestLoad, parsed.full)
        miniDebugInfoRange = parsed.miniDebugInfo
        buildID = Self.buildID(file)
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
        (symbols, stringsOffset, stringsCount) = (parsed.symbols, parsed.stringsOffset, parsed.stringsCount)
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
        return body(UnsafeRawBufferPointer(rebasing: image[range]))
    }

    /// The function containing `address` (a value in the file's own address space):
    /// its name and start.
    func lookup(fileAddress address: UInt64) -> (name: String, start: UInt64)? {
        var lo = 0, hi = symbols.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if symbols[mid].value <= address { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return nil }
        let s = symbols[lo - 1]
        // A sized symbol must contain the address; an unsized one is trusted only nearby.
        if s.size > 0 ? address - s.value >= s.size : address - s.value > 4096 { return nil }
        return (name(at: s.nameOffset), s.value)
    }

    private func name(at offset: Int) -> String {
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
                    return (desc..<desc + Int(descSize)).map { String(format: "%02x", f[$0]) }.joined()
                }
                o = next
            }
        }
        return nil
    }

    private struct Parsed {
        var symbols: [Symbol]
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
        var chosen: (sym: Int, symSize: Int, entsize: Int, str: Int, strSize: Int, full: Bool)?
        for wanted: UInt32 in [2 /* SHT_SYMTAB */, 11 /* SHT_DYNSYM */] where chosen == nil {
            for i in 0..<Int(shnum) {
                guard let o = section(i), r.u32(o + 4) == wanted, let off = r.offset(o + 24), let size = r.offset(o + 32),
                      let link = r.u32(o + 40), let ent = r.u64(o + 56), ent >= 24, ent <= 4096,
                      let lo = section(Int(link)), let soff = r.offset(lo + 24), let ssize = r.offset(lo + 32),
                      soff + ssize <= f.count, off + size <= f.count else { continue }
                chosen = (off, size, Int(ent), soff, ssize, wanted == 2)
                break
            }
        }
        guard let c = chosen else { return nil }
        var symbols: [Symbol] = []
        symbols.reserveCapacity(c.symSize / c.entsize)
        var o = c.sym
        while o + 24 <= c.sym + c.symSize {
            let info = f[o + 4]
            if info & 0xf == 2 /* STT_FUNC */, let name = r.u32(o), let value = r.u64(o + 8), let size = r.u64(o + 16),
               value != 0 {
                symbols.append(Symbol(value: value, size: size, nameOffset: Int(name), binding: info >> 4))
            }
            o += c.entsize
        }
        // By name offset too, so equal-ranked aliases resolve the same way every time.
        symbols.sort { ($0.value, $0.nameOffset) < ($1.value, $1.nameOffset) }
        let strings = UnsafeRawBufferPointer(rebasing: f[c.str..<c.str + c.strSize])
        return Parsed(symbols: bestAliases(symbols, strings: strings), stringsOffset: c.str, stringsCount: c.strSize, relocatable: type == 3 /* ET_DYN */,
                      lowestLoad: lowest, full: c.full,
                      miniDebugInfo: sectionRange(named: ".gnu_debugdata", r: r, count: Int(shnum), names: Int(shstrndx), section: section))
    }

    /// One symbol per address, sorted: aliases share an address (`__pthread_mutex_lock`, the
    /// internal `__GI___pthread_mutex_lock`, `pthread_mutex_lock@@GLIBC_2.2.5`), and the name
    /// people know is the sized, global one in its default version. Ranked only where there are
    /// ties: most addresses have one name.
    private static func bestAliases(_ sorted: [Symbol], strings: UnsafeRawBufferPointer) -> [Symbol] {
        func rank(_ s: Symbol) -> Int {
            (s.size > 0 ? 8 : 0) + (s.binding == 1 || s.binding == 2 ? 4 : 0)
                + (isOldVersion(s.nameOffset, strings) ? 0 : 2) + (hasPrefix(s.nameOffset, "__GI_", strings) ? 0 : 1)
        }
        var unique: [Symbol] = []
        unique.reserveCapacity(sorted.count)
        var i = 0
        while i < sorted.count {
            var best = sorted[i]
            var j = i + 1
            while j < sorted.count, sorted[j].value == best.value {
                if rank(sorted[j]) > rank(best) { best = sorted[j] }
                j += 1
            }
            unique.append(best)
            i = j
        }
        return unique
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
