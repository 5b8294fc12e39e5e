import Foundation
import Vapor

/// What `app.execute()` does, split so the real address is printed between its two steps (the
/// end-to-end tests start the server on port 0 and read the port from this line).
func serve(_ app: Application) async throws {
    do {
        try await app.startup()      // boots and runs `serve`: returns once the server listens
        print("listening on 127.0.0.1:\(app.http.server.shared.localAddress?.port ?? 0)")
        fflush(nil)
        try await app.running?.onStop.get()   // until SIGTERM/SIGINT, which Vapor's serve command handles
    } catch {
        app.logger.report(error: error)
        try? await app.asyncShutdown()
        throw error
    }
    try await app.asyncShutdown()    // the server closes: requests still in flight stay watched
}
