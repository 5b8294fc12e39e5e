import Foundation
import NIOCore
import NIOHTTP1

/// Serves `/` at once, and `/block/<kind>?ms=N` by blocking the event loop itself, each kind in a
/// method of its own so a stall report can be checked for the function it blames.
final class BlockingHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var head: HTTPRequestHead?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let components = URLComponents(string: head.uri)
        let path = components?.path ?? head.uri
        let milliseconds = components?.queryItems?.first { $0.name == "ms" }.flatMap { $0.value.flatMap(Int.init) } ?? 1500
        var status = HTTPResponseStatus.ok
        var body = "ok\n"
        switch path {
        case "/": break
        case "/block/sleep": sleepOnEventLoop(milliseconds: milliseconds)
        case "/block/cpu": computeOnEventLoop(milliseconds: milliseconds)
        case "/block/lock": waitForLockOnEventLoop(milliseconds: milliseconds)
        case "/block/socket": readSocketOnEventLoop(milliseconds: milliseconds)
        default:
            status = .notFound
            body = "not found\n"
        }
        var headers = HTTPHeaders()
        headers.add(name: "content-length", value: "\(body.utf8.count)")
        headers.add(name: "connection", value: head.isKeepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let keepAlive = head.isKeepAlive
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [context] _ in
            if !keepAlive { context.close(promise: nil) }
        }
    }

    @inline(never)
    func sleepOnEventLoop(milliseconds: Int) {
        usleep(UInt32(clamping: milliseconds * 1000))
    }

    @inline(never)
    func computeOnEventLoop(milliseconds: Int) {
        let end = ContinuousClock.now + .milliseconds(milliseconds)
        var x: UInt64 = 1
        while ContinuousClock.now < end {
            for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
        }
        if x == 42 { print("") }
    }

    @inline(never)
    func waitForLockOnEventLoop(milliseconds: Int) {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        defer { mutex.deallocate() }
        let locked = DispatchSemaphore(value: 0)
        let address = UInt(bitPattern: mutex) // a raw pointer is not Sendable; its address is
        let holder = Thread {
            guard let mutex = UnsafeMutablePointer<pthread_mutex_t>(bitPattern: address) else { return }
            pthread_mutex_lock(mutex)
            locked.signal()
            usleep(UInt32(clamping: milliseconds * 1000))
            pthread_mutex_unlock(mutex)
        }
        holder.start()
        locked.wait()
        pthread_mutex_lock(mutex)
        pthread_mutex_unlock(mutex)
    }

    @inline(never)
    func readSocketOnEventLoop(milliseconds: Int) {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return }
        defer { close(pair[0]); close(pair[1]) }
        let peer = pair[1]
        let answer = Thread {
            usleep(UInt32(clamping: milliseconds * 1000))
            _ = write(peer, "x", 1)
        }
        answer.start()
        var byte: UInt8 = 0
        _ = recv(pair[0], &byte, 1, 0)
    }
}
