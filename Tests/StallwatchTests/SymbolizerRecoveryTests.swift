import Foundation
import Glibc
import Testing
@testable import Stallwatch

@Suite("Symbolization after a transient failure", .serialized)
struct SymbolizerRecoveryTests {
    @Test("with every file descriptor taken, a module's symbols are not read; once one is free, they are")
    func fdExhaustionIsNotRemembered() throws {
        let symbolizer = Symbolizer(retryAfter: .milliseconds(1))
        let address = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "clock_nanosleep"))
        let pc = UInt(bitPattern: address) + 4
        var held: [Int32] = []
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let saved = limit
        limit.rlim_cur = 256
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        while true {
            let fd = open("/dev/null", O_RDONLY)
            if fd < 0 { break }
            held.append(fd)
        }
        let starved = symbolizer.symbolize(pc)
        for fd in held { close(fd) }
        var restore = saved
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restore)
        #expect(!held.isEmpty)
        #expect(starved.buildID == nil, "no descriptor, so no symbol file: \(starved)")
        usleep(5_000)
        let later = symbolizer.symbolize(pc)
        #expect(later.buildID != nil, "read again once descriptors are free: \(later)")
        #expect(later.symbol?.contains("clock_nanosleep") == true, "\(later)")
    }
}

@Suite("Symbols loaded ahead of the first report")
struct SymbolPreloadTests {
    @Test("preloading reads the executable's own table, and only that one")
    func preloadLoadsTheExecutable() throws {
        let symbolizer = Symbolizer()
        #expect(symbolizer.loadedModules.isEmpty)
        symbolizer.preloadMainExecutable()
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(symbolizer.loadedModules == [exe], "\(symbolizer.loadedModules) vs \(exe)")
    }

    @Test("preloading the runtime libraries reads libc's, the Swift runtimes' and libdispatch's tables")
    func preloadLoadsRuntimeLibraries() throws {
        let symbolizer = Symbolizer()
        symbolizer.preloadRuntimeLibraries()
        let names = Set(symbolizer.loadedModules.compactMap { $0.split(separator: "/").last.map(String.init) })
        for prefix in ["libc.so", "libswiftCore.so", "libswift_Concurrency.so", "libdispatch.so"] {
            #expect(names.contains { $0.hasPrefix(prefix) }, "\(prefix) not among \(names)")
        }
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(!symbolizer.loadedModules.contains(exe))
    }
}
