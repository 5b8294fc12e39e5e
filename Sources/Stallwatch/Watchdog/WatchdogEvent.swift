import StallwatchReport

/// What the watchdog tells: a stall, its end, a stall it held back and why, a process-CPU report,
/// an error it survived.
///
/// A struct with a ``kind``, not an enum, so that a release can add a kind without breaking a
/// consumer's `switch`: switch over ``kind`` and keep a `default:` branch. The fields a kind does not
/// carry are `nil`.
///
/// ```swift
/// switch event.kind {
/// case .stall: if let report = event.report { print(report.blamedSummary(frames: 3)) }
/// case .error: print("stallwatch: \(event.message ?? "")")
/// default: break
/// }
/// ```
public struct WatchdogEvent: Sendable {
    /// The kind of an event. Compare with the static members; new kinds may come in any release.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's stable name, as in ``WatchdogEvent/summary`` (`stall`, `stallEnded`, ...).
        public let name: String
        init(_ name: String) { self.name = name }

        /// A stall report, once per stall (`report.sequenceInStall == 0`). While the stall lasts its
        /// report file is rewritten under the same id; ``stallEnded`` says when it ended, and the
        /// stored report is then final.
        public static let stall = Kind("stall")
        /// A reported stall is over: ``WatchdogEvent/duration`` runs from the start of the stalled
        /// job or tick to its end.
        public static let stallEnded = Kind("stallEnded")
        /// A stall was noticed but not reported, and why (``WatchdogEvent/filterReason``: trivial
        /// stack, back-off, daily cap).
        public static let filtered = Kind("filtered")
        /// A key came round more often than its threshold within one busy period of a loop
        /// (see ``FeedbackCounter``): a loop that never settles, reported with the call that crossed it.
        public static let feedbackLoop = Kind("feedbackLoop")
        /// A ping-probed loop busy for `busyLoopWindow` without stalling, the same stack recurring.
        public static let busyLoop = Kind("busyLoop")
        /// The process uses much CPU (a `cpuHigh` or `cpuSustained` report).
        public static let cpu = Kind("cpu")
        /// Something went wrong that the watchdog survived (e.g. the report directory is
        /// unwritable); ``WatchdogEvent/message`` says what. The stall event itself was still delivered.
        public static let error = Kind("error")

        public var description: String { name }
    }

    /// What happened.
    public let kind: Kind
    /// The report, for ``Kind/stall``, ``Kind/feedbackLoop``, ``Kind/busyLoop`` and ``Kind/cpu``.
    public let report: StallReport?
    /// The loop the event is about (``Kind/stallEnded``, ``Kind/filtered``, and every kind with a
    /// report that names one).
    public let loop: String?
    /// The stalled thread, for ``Kind/stallEnded`` (a report names its own thread).
    public let thread: ThreadID?
    /// For ``Kind/stallEnded``: how long the stall lasted.
    public let duration: Duration?
    /// For ``Kind/filtered``: why no report was written.
    public let filterReason: FilterReason?
    /// For ``Kind/error``: what went wrong.
    public let message: String?

    private init(kind: Kind, report: StallReport? = nil, loop: String? = nil, thread: ThreadID? = nil,
                 duration: Duration? = nil, filterReason: FilterReason? = nil, message: String? = nil) {
        self.kind = kind
        self.report = report
        self.loop = loop ?? report?.loopName
        self.thread = thread
        self.duration = duration
        self.filterReason = filterReason
        self.message = message
    }

    package static func stall(_ report: StallReport) -> WatchdogEvent { WatchdogEvent(kind: .stall, report: report) }
    package static func stallEnded(loop: String, thread: ThreadID?, duration: Duration) -> WatchdogEvent {
        WatchdogEvent(kind: .stallEnded, loop: loop, thread: thread, duration: duration)
    }
    package static func filtered(loop: String, reason: FilterReason) -> WatchdogEvent {
        WatchdogEvent(kind: .filtered, loop: loop, filterReason: reason)
    }
    package static func feedbackLoop(_ report: StallReport) -> WatchdogEvent { WatchdogEvent(kind: .feedbackLoop, report: report) }
    package static func busyLoop(_ report: StallReport) -> WatchdogEvent { WatchdogEvent(kind: .busyLoop, report: report) }
    package static func cpu(_ report: StallReport) -> WatchdogEvent { WatchdogEvent(kind: .cpu, report: report) }
    package static func error(_ message: String) -> WatchdogEvent { WatchdogEvent(kind: .error, message: message) }
}
