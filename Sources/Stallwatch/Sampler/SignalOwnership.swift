import CSampler

/// Who handles the sampling signal right now. Another library or the application can call
/// `sigaction` after the sampler was installed; from then on our requests and timer ticks go to
/// its handler (or, if it reset the signal to its default action, would kill the process).
package enum SignalOwnership: Sendable, Equatable {
    /// The sampler was never installed.
    case notInstalled
    /// Our handler: sampling running threads works.
    case ours
    /// Another handler took the signal over.
    case replaced
    /// The signal was reset to its default action (for SIGPROF: terminate the process).
    case defaultAction
    /// The signal is ignored.
    case ignored

    init(code: Int32) {
        switch code {
        case Int32(SW_HANDLER_OURS): self = .ours
        case Int32(SW_HANDLER_REPLACED): self = .replaced
        case Int32(SW_HANDLER_DEFAULT): self = .defaultAction
        case Int32(SW_HANDLER_IGNORED): self = .ignored
        default: self = .notInstalled
        }
    }

    /// Words for a log line or an error event.
    package var description: String {
        switch self {
        case .notInstalled: "the sampling handler is not installed"
        case .ours: "the sampling handler is installed"
        case .replaced: "another handler replaced the sampling handler"
        case .defaultAction: "the sampling signal was reset to its default action"
        case .ignored: "the sampling signal is ignored"
        }
    }
}

extension StackSampler {
    /// Who handles the sampling signal now (one `sigaction` call, about a microsecond).
    package var signalOwnership: SignalOwnership {
        SignalOwnership(code: sw_sampler_handler_state())
    }

    /// Installs the sampling handler again after another one replaced it; signals that are not
    /// ours are passed on to that handler.
    package func reclaimSignal() throws(SamplerError) {
        let rc = sw_sampler_reclaim()
        guard rc == 0 else {
            throw SamplerError.from(code: rc, thread: .current, signal: configuration.signal,
                                    timeout: .zero, operation: "reinstalling the sampling handler")
        }
    }
}
