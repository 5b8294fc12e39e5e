/// A thread's scheduler state, as the letter in `/proc/<pid>/task/<tid>/stat` gives it.
package enum ThreadState: Hashable, Sendable, Codable, CustomStringConvertible {
    /// `R`: running or runnable (on a run queue).
    case running
    /// `S`: interruptible sleep — waiting for an event (futex, I/O readiness, timer).
    case sleeping
    /// `D`: uninterruptible sleep, usually disk I/O or a kernel lock.
    case diskSleep
    /// `T`: stopped by a job-control signal.
    case stopped
    /// `t`: stopped by a tracer (debugger).
    case tracingStop
    /// `Z`: exited, not yet reaped.
    case zombie
    /// `X`/`x`: being torn down.
    case dead
    /// `I`: an idle kernel thread.
    case idle
    /// Any letter this type does not know (kernels add some: `W`, `K`, `P`).
    case unknown(Character)

    /// Interprets a `/proc` state letter.
    package init(procLetter letter: Character) {
        switch letter {
        case "R": self = .running
        case "S": self = .sleeping
        case "D": self = .diskSleep
        case "T": self = .stopped
        case "t": self = .tracingStop
        case "Z": self = .zombie
        case "X", "x": self = .dead
        case "I": self = .idle
        default: self = .unknown(letter)
        }
    }

    /// The `/proc` letter for this state.
    package var procLetter: Character {
        switch self {
        case .running: "R"
        case .sleeping: "S"
        case .diskSleep: "D"
        case .stopped: "T"
        case .tracingStop: "t"
        case .zombie: "Z"
        case .dead: "X"
        case .idle: "I"
        case .unknown(let letter): letter
        }
    }

    /// A short name: the case name for known states, the raw letter otherwise.
    package var description: String {
        switch self {
        case .running: "running"
        case .sleeping: "sleeping"
        case .diskSleep: "diskSleep"
        case .stopped: "stopped"
        case .tracingStop: "tracingStop"
        case .zombie: "zombie"
        case .dead: "dead"
        case .idle: "idle"
        case .unknown(let letter): String(letter)
        }
    }

    /// Decodes the short name written by ``encode(to:)``; a single letter is read as a `/proc` letter.
    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        switch text {
        case "running": self = .running
        case "sleeping": self = .sleeping
        case "diskSleep": self = .diskSleep
        case "stopped": self = .stopped
        case "tracingStop": self = .tracingStop
        case "zombie": self = .zombie
        case "dead": self = .dead
        case "idle": self = .idle
        default:
            guard text.count == 1, let letter = text.first else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "unknown thread state \"\(text)\""))
            }
            self = ThreadState(procLetter: letter)
        }
    }

    /// Encodes as the short name (``description``).
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
