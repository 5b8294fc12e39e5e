import StallwatchPolicy
import StallwatchReport
import Testing

/// The summary leads with the service's own code: frameworks linked into the same executable
/// (Vapor, SwiftNIO, Hummingbird) and the runtime are passed over by the Swift module in their names.
@Suite struct ServiceFramesTests {
    static let executable = "/srv/app/.build/debug/VaporServer"

    private func frame(_ symbol: String?, module: String = executable) -> ReportFrame {
        ReportFrame(address: 0x1000, info: SymbolInfo(module: module, moduleOffset: 0x10, symbol: symbol), sampleCount: 3)
    }

    private func report(_ stack: [ReportFrame]) -> StallReport {
        var r = StallReport(kind: .stall, id: "r", startTimeUnixNanoseconds: 0, duration: .seconds(1),
                            durationIsFinal: true, threadCount: 1, configuration: WatchdogConfiguration())
        r.blamedStack = stack
        return r
    }

    /// A bcrypt hash in a Vapor route, as a pool job: Vapor's C and Swift frames are the leaf, the
    /// route's closure is the sixth frame, then a thunk, Vapor's responder and the runtime.
    private var vaporBcryptStack: [ReportFrame] {
        [
            frame("Vapor_Blowfish_encipher"),
            frame("Vapor_Blowfish_expandstate"),
            frame("vapor_bcrypt_hashpass"),
            frame("Vapor.BCryptDigest.hash(_: Swift.String, salt: Swift.String) throws -> Swift.String"),
            frame("Vapor.BCryptDigest.hash(_: Swift.String, cost: Swift.Int) throws -> Swift.String"),
            frame("closure #3 (Vapor.Request) async throws -> Swift.String in VaporServer.addRoutes(to: Vapor.Application) -> ()"),
            frame("reabstraction thunk helper from @escaping @callee_guaranteed @Sendable @async (@guaranteed Vapor.Request) -> (@owned Swift.String, @error @owned Swift.Error) to @escaping @callee_guaranteed @Sendable @async (@guaranteed Vapor.Request) -> (@out Swift.String, @error @owned Swift.Error)"),
            frame("VaporServer.handleSignup(request: Vapor.Request) async throws -> Swift.String"),
            frame("protocol witness for Vapor.AsyncResponder.respond(to: Vapor.Request) async throws -> Vapor.Response in conformance Vapor.AsyncBasicResponder : Vapor.AsyncResponder in Vapor"),
            frame("swift::runJobInEstablishedExecutorContext(swift::Job*)", module: "/usr/lib/swift/linux/libswift_Concurrency.so"),
            frame("_dispatch_worker_thread", module: "/usr/lib/swift/linux/libdispatch.so"),
            frame("start_thread", module: "/lib/x86_64-linux-gnu/libc.so.6"),
        ]
    }

    @Test func aVaporBcryptStallIsSummarizedFromTheRoutesClosure() {
        let summary = report(vaporBcryptStack).blamedSummary(frames: 2)
        #expect(summary == "closure #3 (Vapor.Request) async throws -> Swift.String in VaporServer.addRoutes(to: Vapor.Application) -> ()"
                + " <- VaporServer.handleSignup(request: Vapor.Request) async throws -> Swift.String",
                "Vapor's frames are passed over and the thunk left out: \(summary)")
        #expect(ServiceFrames.firstServiceFrame(in: vaporBcryptStack) == 5)
        let longer = report(vaporBcryptStack).blamedSummary(frames: 5)
        #expect(longer.split(separator: "<-").count == 2 && !longer.contains("swift::") && !longer.contains("AsyncBasicResponder"),
                "only the service's frames, not Vapor's responder or the runtime below it: \(longer)")
    }

    @Test func aCFunctionOfTheServiceBelowASystemLibraryLeadsTheSummary() {
        let stack = [
            frame("PKCS5_PBKDF2_HMAC", module: "/lib/x86_64-linux-gnu/libcrypto.so.3"),
            frame("bw_pbkdf2"),
            frame("BlockingWork.hashPassword(milliseconds: Swift.Int) -> ()"),
            frame("NIOServer.BlockingHTTPHandler.channelRead(context: NIOCore.ChannelHandlerContext, data: NIOCore.NIOAny) -> ()"),
            frame("NIOCore.ChannelHandlerContext.invokeChannelRead(NIOCore.NIOAny) -> ()"),
        ]
        #expect(report(stack).blamedSummary() == "bw_pbkdf2 <- BlockingWork.hashPassword(milliseconds: Swift.Int) -> ()"
                + " <- NIOServer.BlockingHTTPHandler.channelRead(context: NIOCore.ChannelHandlerContext, data: NIOCore.NIOAny) -> ()")
    }

    @Test func withoutAnyServiceFrameTheSummaryFallsBackToTheFirstNonSystemFrame() {
        let stack = [
            frame("nanosleep", module: "/lib/x86_64-linux-gnu/libc.so.6"),
            frame("NIOPosix.SelectableEventLoop.run() throws -> ()"),
            frame("NIOPosix.MultiThreadedEventLoopGroup.setupThreadAndEventLoop() -> ()"),
        ]
        #expect(report(stack).blamedSummary(frames: 1) == "NIOPosix.SelectableEventLoop.run() throws -> ()")
        #expect(report([]).blamedSummary() == "")
    }

    @Test(arguments: [
        ("Vapor.BCryptDigest.hash(_: Swift.String, cost: Swift.Int) throws -> Swift.String", "Vapor"),
        ("closure #3 (Vapor.Request) async throws -> Swift.String in VaporServer.addRoutes(to: Vapor.Application) -> ()", "VaporServer"),
        ("closure #1 () -> () in closure #2 (Swift.Int) -> () in MyService.run() -> ()", "MyService"),
        ("closure #1 (() -> ()) -> () in MyService.f() -> ()", "MyService"),
        ("(extension in NIOCore):NIOCore.EventLoopFuture.flatMap<A>((A) -> NIOCore.EventLoopFuture<A1>) -> NIOCore.EventLoopFuture<A1>", "NIOCore"),
        ("generic specialization <Swift.Int> of NIOCore.EventLoopFuture.map<A>((A) -> A1) -> NIOCore.EventLoopFuture<A1>", "NIOCore"),
        ("static HummingbirdServer.Handlers.block() -> ()", "HummingbirdServer"),
        ("protocol witness for NIOCore._ChannelInboundHandler.channelRead(context: NIOCore.ChannelHandlerContext, data: NIOCore.NIOAny) -> () in conformance NIOServer.BlockingHTTPHandler : NIOCore._ChannelInboundHandler in NIOServer", "NIOServer"),
        ("(1) suspend resume partial function for closure #1 @Sendable () async -> () in HummingbirdCore.Server.run() async throws -> ()", "HummingbirdCore"),
    ])
    func theSwiftModuleIsTheOwnersModule(symbol: String, module: String) {
        #expect(ServiceFrames.swiftModule(of: symbol) == module)
    }

    /// CI saw a CPU stall sampled in a PLT stub, which the executable's symbol table names `_init`
    /// (the function before the PLT): the summary must start at the caller.
    @Test func aPLTStubNamedInitDoesNotLeadTheSummary() {
        let stack = [
            frame("_init"),
            frame("BlockingWork.blockOnCPU(milliseconds: Swift.Int) -> ()"),
            frame("VaporServer.computingHandler(milliseconds: Swift.Int) -> ()"),
        ]
        #expect(report(stack).blamedSummary(frames: 2)
            == "BlockingWork.blockOnCPU(milliseconds: Swift.Int) -> () <- VaporServer.computingHandler(milliseconds: Swift.Int) -> ()")
        #expect(ServiceFrames.kind(of: frame("_init")) == .glue)
    }

    @Test func kindsOfFrames() {
        #expect(ServiceFrames.kind(of: frame("c_nio_posix_accept")) == .framework)
        #expect(ServiceFrames.kind(of: frame("my_c_helper")) == .service)
        #expect(ServiceFrames.kind(of: frame("HummingbirdServer.addRoutes(to: Hummingbird.Router<Hummingbird.BasicRequestContext>) -> ()")) == .service,
                "a service's module named after its framework is the service's")
        #expect(ServiceFrames.kind(of: frame("NIOServer.BlockingHTTPHandler.channelRead(context: NIOCore.ChannelHandlerContext, data: NIOCore.NIOAny) -> ()")) == .service)
        #expect(ServiceFrames.kind(of: frame("NIOPosix.SelectableEventLoop.run() throws -> ()")) == .framework)
        #expect(ServiceFrames.kind(of: frame("HummingbirdCore.HTTPChannelHandler.handleHTTP() async -> ()")) == .framework)
        #expect(ServiceFrames.kind(of: frame("thunk for @escaping @callee_guaranteed @Sendable () -> ()")) == .glue)
        #expect(ServiceFrames.kind(of: frame(nil)) == .unnamed)
        #expect(ServiceFrames.kind(of: frame("MyServiceCore.Store.load() -> ()", module: "/opt/app/libMyServiceCore.so")) == .service)
        #expect(ServiceFrames.kind(of: frame("memcpy", module: "/lib/x86_64-linux-gnu/libc.so.6")) == .framework)
        // With -static-stdlib the runtime and libdispatch are in the executable too.
        #expect(ServiceFrames.kind(of: frame("_dispatch_worker_thread")) == .framework)
        #expect(ServiceFrames.kind(of: frame("swift_job_run")) == .framework)
        #expect(ServiceFrames.kind(of: frame("swift::runJobInEstablishedExecutorContext(swift::Job*)")) == .glue)
    }
}
