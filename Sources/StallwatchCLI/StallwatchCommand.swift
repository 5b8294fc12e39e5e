import ArgumentParser

/// `stallwatch`: see Stallwatch at work, and read its reports.
@main
struct StallwatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stallwatch",
        abstract: "Stall detection for Linux Swift services.",
        subcommands: [Demo.self, Show.self, List.self, Fold.self, Pprof.self, OTLPProfile.self, Flame.self]
    )
}
