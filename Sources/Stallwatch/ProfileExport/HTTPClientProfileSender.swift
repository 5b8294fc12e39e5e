#if OTLPProfiles
import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Posts with async-http-client, as swift-otel's exporters do: pooled connections, TLS for an
/// `https` endpoint, NIO's shared event loops. A client of its own, made when the exporter starts
/// and shut down when it stops, with tracing off: the exporter's requests are not the service's
/// traffic, and a span per try would fill the service's traces while a receiver is down.
final class HTTPClientProfileSender: ProfileRequestSender {
    let url: String
    private let client: HTTPClient

    init(url: String) {
        self.url = url
        var configuration = HTTPClient.Configuration()
        configuration.tracing.tracer = nil
        // A refused connection fails the try at once: with the client's own connection retries on,
        // a try against a receiver that is down failed only at its timeout (the first error came
        // 6.0 s after the stall at a 5 s timeout). The exporter retries with its own backoff.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func post(_ body: [UInt8], headers: [(String, String)], timeout: Duration) async -> ProfilePostAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let nanoseconds = Int64(clamping: timeout.components.seconds) * 1_000_000_000
                + timeout.components.attoseconds / 1_000_000_000
            let response = try await client.execute(request, timeout: .nanoseconds(nanoseconds))
            // The body (a partial-success message, or an error's) is read whole: the connection
            // returns to the pool only once it is. One past the bound is not read as a message.
            var body: [UInt8] = []
            var unread: String?
            do {
                body = Array(try await response.body.collect(upTo: Self.bodyLimit).readableBytesView)
            } catch is NIOTooManyBytesError {
                unread = "its body is over \(Self.bodyLimit >> 10) KiB"
            } catch {
                unread = "its body could not be read (\(error))"
            }
            return ProfilePostAnswer(status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                                     body: body, contentType: response.headers.first(name: "Content-Type"),
                                     bodyUnread: unread)
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            return ProfilePostAnswer(failure: "no answer within \(timeout)")
        } catch {
            return ProfilePostAnswer(failure: "\(error)")
        }
    }

    /// The most of an answer's body read: OTLP answers are a few bytes to a few hundred.
    static let bodyLimit = 64 << 10

    func shutdown() async {
        try? await client.shutdown()
    }
}
#endif
