import Testing
@testable import Stallwatch

/// The `OTEL_*` variables as swift-otel reads them, and a clear error for each malformed one.
@Suite struct OTLPExporterSettingsTests {
    typealias Configuration = OTLPProfileExporter.Configuration

    @Test func noEndpointMeansNoExporter() throws {
        #expect(try Configuration.fromEnvironment([:]) == nil)
        #expect(try Configuration.fromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "  "]) == nil)
        #expect(try Configuration.fromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"]) == nil)
    }

    @Test func theGeneralEndpointGetsTheProfilesPathTheSignalOneIsTakenAsIs() throws {
        let base = try #require(try Configuration.fromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
        #expect(base.endpoint == "http://collector:4318/v1development/profiles")
        let slash = try #require(try Configuration.fromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example/otlp/"]))
        #expect(slash.endpoint == "https://c.example/otlp/v1development/profiles")
        let own = try #require(try Configuration.fromEnvironment([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318",
            "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://[::1]:9999/custom"]))
        #expect(own.endpoint == "http://[::1]:9999/custom")
    }

    @Test func theSignalsOwnVariablesWinAndValuesAreDecoded() throws {
        let c = try #require(try Configuration.fromEnvironment([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=general",
            "OTEL_EXPORTER_OTLP_PROFILES_HEADERS": " x-api-key = a%20b%3D , x-tenant=t1 ",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,deployment.environment=prod",
            "OTEL_SERVICE_NAME": "checkout"]))
        #expect(c.headers == ["x-api-key": "a b=", "x-tenant": "t1"])
        #expect(c.timeout == .milliseconds(2500))
        #expect(c.compression == .gzip)
        #expect(c.resourceAttributes == ["service.name": "checkout", "deployment.environment": "prod"])
    }

    @Test(arguments: [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "not an http:// or https:// URL"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://:4318", "no host"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:43x8", "port \"43x8\""),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:70000", "1...65535"),
        ("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://c /v1", "white space"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key", "is not key=value"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "=v", "has no key"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "k=%zz", "malformed %-escape"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "bad name=v", "not an HTTP token"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s", "milliseconds"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "0", "milliseconds"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf only"),
        ("OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "thrift", "not an OTLP protocol"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "gzip or none"),
        ("OTEL_RESOURCE_ATTRIBUTES", "service.name", "is not key=value"),
    ])
    func aMalformedValueIsAnErrorNamingIt(variable: String, value: String, says: String) throws {
        var environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        environment[variable] = value
        let error = #expect(throws: OTLPExporterError.self) { try Configuration.fromEnvironment(environment) }
        let message = error?.message ?? ""
        #expect(message.contains(says), "\(message)")
        #expect(message.contains(variable) || variable.hasSuffix("HEADERS"), "\(message)")
    }

    @Test func boundsInCodeAreChecked() {
        var c = Configuration(endpoint: "http://c:4318/v1development/profiles")
        #expect(throws: Never.self) { try c.validated() }
        c.maxQueuedBytes = c.maxRequestBytes - 1
        #expect(throws: OTLPExporterError.self) { try c.validated() }
        c = Configuration(endpoint: "http://c:4318/p")
        c.headers = ["x": "a\r\nInjected: 1"]
        #expect(throws: OTLPExporterError.self) { try c.validated() }
        c = Configuration(endpoint: "http://c:4318/p")
        c.maxAttempts = 0
        #expect(throws: OTLPExporterError.self) { try c.validated() }
    }
}

/// When a failed export is tried again.
@Suite struct ExportRetryTests {
    @Test func onlyLoadSheddingAnswersAreRetried() {
        #expect([429, 502, 503, 504].allSatisfy(ExportRetry.isRetryable))
        #expect(![200, 400, 401, 404, 413, 500].contains(where: ExportRetry.isRetryable))
    }

    @Test func theWaitDoublesWithJitterAndIsCut() {
        let longest = Duration.seconds(30)
        #expect(ExportRetry.delay(afterAttempt: 1, retryAfter: nil, jitter: 0, longest: longest) == .seconds(1))
        #expect(ExportRetry.delay(afterAttempt: 3, retryAfter: nil, jitter: 0, longest: longest) == .seconds(4))
        #expect(ExportRetry.delay(afterAttempt: 3, retryAfter: nil, jitter: 1, longest: longest) == .milliseconds(4800))
        #expect(ExportRetry.delay(afterAttempt: 3, retryAfter: nil, jitter: -1, longest: longest) == .milliseconds(3200))
        #expect(ExportRetry.delay(afterAttempt: 9, retryAfter: nil, jitter: 0, longest: longest) == longest)
        #expect(ExportRetry.delay(afterAttempt: 1, retryAfter: .seconds(7), jitter: 1, longest: longest) == .seconds(7))
        #expect(ExportRetry.delay(afterAttempt: 1, retryAfter: .seconds(600), jitter: 0, longest: longest) == longest)
    }

    @Test func retryAfterIsSecondsOrAnHTTPDate() {
        // 1994-11-06 08:49:37 UTC is 784111777 s after the epoch.
        #expect(ExportRetry.imfFixdate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(ExportRetry.retryAfter("5", nowUnixSeconds: 0) == .seconds(5))
        #expect(ExportRetry.retryAfter("Sun, 06 Nov 1994 08:49:47 GMT", nowUnixSeconds: 784_111_777) == .seconds(10))
        #expect(ExportRetry.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", nowUnixSeconds: 784_111_999) == .zero)
        #expect(ExportRetry.retryAfter("-3", nowUnixSeconds: 0) == nil)
        #expect(ExportRetry.retryAfter("soon", nowUnixSeconds: 0) == nil)
        #expect(ExportRetry.retryAfter("Sunday, 06-Nov-94 08:49:37 GMT", nowUnixSeconds: 0) == nil)
    }
}
