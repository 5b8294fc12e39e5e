import Glibc

/// The function symbols of one ELF file, from `.symtab` (full, when not stripped) or `.dynsym`.
///
/// `dladdr` sees only exported (dynamic) symbols, so internal Swift functions, closures and static C
/// functions stay anonymous with it; the static symbol table names them. The file is mapped
/// read-only and stays mapped for the life of the table.
final class ELFSymbolTable: Sendable {
    private struct Symbol: Sendable {
        let value: UInt64
        let size: UInt64
        let nameOffset: Int
    }

    private let symbols: [Symbol]
    private let stringsOffset: Int   // the string table inside the read-only mapping
    private let stringsCount: Int
    /// `true` for position-independent files (ET_DYN): symbol values are relative to the load bias.
    let isRelocatable: Bool
    /// Lowest PT_LOAD virtual address (0 for most shared objects and PIEs).
    let lowestLoadAddress: UInt64
    /// The GNU build id (lowercase hex), which names the exact binary for symbolizing later.
    let buildID: String?

    // The mapping is never written and never unmapped while the table lives; it is shared read-only.
    nonisolated(unsafe) private let mapping: UnsafeRawBufferPointer

    /// Maps and parses `path`; `nil` when it is not a readable 64-bit ELF file with a symbol table.
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 64 else { return nil }
        let size = Int(st.st_size)
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
        let file = UnsafeRawBufferPointer(start: base, count: size)
        guard let parsed = Self.parse(file) else {
            munmap(base, size)
            return nil
        }
        mapping = file
        symbols = parsed.symbols
        stringsOffset = parsed.stringsOffset
        stringsCount = parsed.stringsCount
        isRelocatable = parsed.relocatable
        lowestLoadAddress = parsed.lowestLoad
        buildID = Self.buildID(file)
    }

    deinit {
        if let base = mapping.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), mapping.count) }
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
        if s.size > 0 ? address >= s.value + s.size : address - s.value > 4096 { return nil }
        return (name(at: s.nameOffset), s.value)
    }

    private func name(at offset: Int) -> String {
        guard offset >= 0, offset < stringsCount, let base = mapping.baseAddress else { return "" }
        let p = base.advanced(by: stringsOffset + offset).assumingMemoryBound(to: CChar.self)
        let limit = stringsCount - offset
        let len = strnlen(p, limit)
        return String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
    }

    /// Reads NT_GNU_BUILD_ID from the PT_NOTE segments.
    private static func buildID(_ f: UnsafeRawBufferPointer) -> String? {
        func u16(_ o: Int) -> UInt16? { o >= 0 && o + 2 <= f.count ? f.loadUnaligned(fromByteOffset: o, as: UInt16.self) : nil }
        func u32(_ o: Int) -> UInt32? { o >= 0 && o + 4 <= f.count ? f.loadUnaligned(fromByteOffset: o, as: UInt32.self) : nil }
        func u64(_ o: Int) -> UInt64? { o >= 0 && o + 8 <= f.count ? f.loadUnaligned(fromByteOffset: o, as: UInt64.self) : nil }
        guard let phoff = u64(0x20), let phentsize = u16(0x36), let phnum = u16(0x38) else { return nil }
        for i in 0..<Int(phnum) {
            let ph = Int(phoff) + i * Int(phentsize)
            guard u32(ph) == 4 /* PT_NOTE */, let off = u64(ph + 8), let size = u64(ph + 32) else { continue }
            var o = Int(off)
            let end = min(Int(off) + Int(size), f.count)
            while o + 12 <= end, let nameSize = u32(o), let descSize = u32(o + 4), let type = u32(o + 8) {
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

    private static func parse(_ f: UnsafeRawBufferPointer)
        -> (symbols: [Symbol], stringsOffset: Int, stringsCount: Int, relocatable: Bool, lowestLoad: UInt64)? {
        func u16(_ o: Int) -> UInt16? { o + 2 <= f.count ? f.loadUnaligned(fromByteOffset: o, as: UInt16.self) : nil }
        func u32(_ o: Int) -> UInt32? { o + 4 <= f.count ? f.loadUnaligned(fromByteOffset: o, as: UInt32.self) : nil }
        func u64(_ o: Int) -> UInt64? { o + 8 <= f.count ? f.loadUnaligned(fromByteOffset: o, as: UInt64.self) : nil }
        guard f[0] == 0x7f, f[1] == 0x45, f[2] == 0x4c, f[3] == 0x46, f[4] == 2 /* 64-bit */ else { return nil }
        guard let type = u16(16), let phoff = u64(0x20), let shoff = u64(0x28),
              let phentsize = u16(0x36), let phnum = u16(0x38),
              let shentsize = u16(0x3a), let shnum = u16(0x3c) else { return nil }
        var lowest = UInt64.max
        for i in 0..<Int(phnum) {
            let o = Int(phoff) + i * Int(phentsize)
            if u32(o) == 1, let vaddr = u64(o + 16) { lowest = min(lowest, vaddr & ~0xfff) }
        }
        if lowest == .max { lowest = 0 }
        // Prefer the full static table; fall back to the dynamic one.
        var chosen: (sym: Int, symSize: Int, entsize: Int, str: Int, strSize: Int)?
        for wanted: UInt32 in [2 /* SHT_SYMTAB */, 11 /* SHT_DYNSYM */] where chosen == nil {
            for i in 0..<Int(shnum) {
                let o = Int(shoff) + i * Int(shentsize)
                guard u32(o + 4) == wanted, let off = u64(o + 24), let size = u64(o + 32),
                      let link = u32(o + 40), let ent = u64(o + 56), ent >= 24 else { continue }
                let lo = Int(shoff) + Int(link) * Int(shentsize)
                guard let soff = u64(lo + 24), let ssize = u64(lo + 32),
                      Int(soff) + Int(ssize) <= f.count, Int(off) + Int(size) <= f.count else { continue }
                chosen = (Int(off), Int(size), Int(ent), Int(soff), Int(ssize))
                break
            }
        }
        guard let c = chosen else { return nil }
        var symbols: [Symbol] = []
        symbols.reserveCapacity(c.symSize / c.entsize)
        var o = c.sym
        while o + 24 <= c.sym + c.symSize {
            let info = f[o + 4]
            if info & 0xf == 2 /* STT_FUNC */, let name = u32(o), let value = u64(o + 8), let size = u64(o + 16),
               value != 0 {
                symbols.append(Symbol(value: value, size: size, nameOffset: Int(name)))
            }
            o += c.entsize
        }
        symbols.sort { $0.value < $1.value }
        return (symbols, c.str, c.strSize, type == 3 /* ET_DYN */, lowest)
    }
}
