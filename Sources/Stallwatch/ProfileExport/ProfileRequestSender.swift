/// Posts one encoded OTLP request and says how the receiver answered; the exporter's only contact
/// with the network, so its queue, bound and retries are tested apart from it.
package protocol ProfileRequestSender: Sendable {
    /// Posts `body` (already compressed when `headers` say so) and returns the answer, or why there
    /// was none (refused, timed out); never throws.
    func post(_ body: [UInt8], headers: [(String, String)], timeout: Duration) async -> ProfilePostAnswer
    /// Lets go of connections and threads; the sender is not used after it.
    func shutdown() async
}

extension ProfileRequestSender {
    package func shutdown() async {}
}

/// How a post ended.
package struct ProfilePostAnswer: Sendable, Equatable {
    /// The HTTP status, `nil` when no answer came.
    package var status: Int?
    /// The answer's `Retry-After`, if it had one.
    package var retryAfter: String?
    /// Why no answer came (`connection refused`, `timed out after 10 s`).
    package var failure: String?
    /// The answer's body (its first 64 KiB): a partial-success message, or an error's.
    package var body: [UInt8]
    /// The answer's `Content-Type`.
    package var contentType: String?
    /// Why the answer's body was not read (over 64 KiB, or its read failed); `nil` when it was.
    package var bodyUnread: String?

    package init(status: Int? = nil, retryAfter: String? = nil, failure: String? = nil,
                 body: [UInt8] = [], contentType: String? = nil, bodyUnread: String? = nil) {
        self.status = status
        self.retryAfter = retryAfter
        self.failure = failure
        self.body = body
        self.contentType = contentType
        self.bodyUnread = bodyUnread
    }
}
