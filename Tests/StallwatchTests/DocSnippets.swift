import Dispatch
import Stallwatch

// Snippets of the documentation catalog's articles (Sources/Stallwatch/Stallwatch.docc) that no
// example holds: compiled here with the tests, never run. scripts/check-readme-snippets.py proves
// each article shows them verbatim.
enum DocSnippets {
    static func handle(_ request: String) {}

    /// GettingStarted.md
    static func gettingStarted(request: String) async throws {
        let watchdog = try Watchdog(configuration: .init(threshold: .milliseconds(500)),
                                    reportDirectory: "/var/lib/myservice/stalls")
        let probe = watchdog.makeProbe(name: "request-loop")
        try watchdog.start()

        // In the loop:
        probe.busy()
        handle(request)
        probe.idle()

        // Anywhere:
        for await event in watchdog.events {
            if event.kind == .stall, let report = event.report { print(report.blamedSummary(frames: 3)) }
        }
    }

    /// ThreadsAndDispatch.md
    static func threadsAndDispatch(watchdog: Watchdog, jobs: [@Sendable () -> Void]) {
        let queue = DispatchQueue(label: "com.example.render")
        watchdog.monitor(PingProbe.dispatchQueue(queue, name: "render-queue"))   // a serial queue, pinged
        watchdog.monitor(PingProbe.dispatchQueue(.main, name: "main"))           // the main queue, once it runs

        let probe = watchdog.makeProbe(name: "worker-loop")   // a thread of your own: heartbeats
        for job in jobs {
            probe.busy()
            job()
            probe.idle()
        }
    }
}
