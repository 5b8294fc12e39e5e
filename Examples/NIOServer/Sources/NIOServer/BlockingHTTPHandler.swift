import BlockingWork
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
        case "/inject/future":
            body = timedInjection(kind: "future", milliseconds: milliseconds) {
                computeInFutureChain(on: context.eventLoop, milliseconds: milliseconds)
            }
        case _ where path.hasPrefix("/inject/"):
            // The matrix's labelled stalls, on this event loop; the answer says when and where.
            if let answer = injectOnEventLoop(kind: String(path.dropFirst("/inject/".count)), milliseconds: milliseconds) {
                body = answer
            } else {
                status = .notFound
                body = "not found\n"
            }
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
        // The channel, not the context, goes into the completion: a Channel is Sendable.
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    @inline(never)
    func sleepOnEventLoop(milliseconds: Int) { blockInSleep(milliseconds: milliseconds) }

    @inline(never)
    func computeOnEventLoop(milliseconds: Int) { blockOnCPU(milliseconds: milliseconds) }

    @inline(never)
    func waitForLockOnEventLoop(milliseconds: Int) { blockOnLock(milliseconds: milliseconds) }

    @inline(never)
    func injectOnEventLoop(kind: String, milliseconds: Int) -> String? {
        runInjection(kind: kind, milliseconds: milliseconds)
    }

    /// A chain of already-completed futures: every step runs at once, inside this one loop tick.
    @inline(never)
    func computeInFutureChain(on eventLoop: any EventLoop, milliseconds: Int) {
        let steps = 10
        var future = eventLoop.makeSucceededFuture(0)
        for _ in 0..<steps {
            future = future.map { (n: Int) -> Int in
                blockOnCPU(milliseconds: milliseconds / steps)
                return n + 1
            }
        }
        _ = future
    }

    @inline(never)
    func readSocketOnEventLoop(milliseconds: Int) { blockOnSocketRead(milliseconds: milliseconds) }
}
