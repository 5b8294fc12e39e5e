import Glibc
import Hummingbird

/// The consumer's own handler code: the only file the check writes itself.
func addRoutes(to router: Router<BasicRequestContext>) {
    router.get("/") { _, _ in "hello from a service that pasted the README\n" }
    router.get("/slow") { _, _ in
        slowLookup()
        return "done\n"
    }
}

/// Blocks its pool thread for 1.2 s, so the check gets a stall report to read with `stallwatch show`.
@inline(never)
func slowLookup() {
    usleep(1_200_000)
}
