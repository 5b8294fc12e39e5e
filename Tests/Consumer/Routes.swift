import Hummingbird

/// The consumer's own handler code: the only file the check writes itself.
func addRoutes(to router: Router<BasicRequestContext>) {
    router.get("/") { _, _ in "hello from a service that pasted the README\n" }
}
