import ReportFixtures
import StallwatchExport
import StallwatchReport
import Testing
@testable import Stallwatch

/// The exporter's queue: bounded by encoded bytes, oldest dropped first, a profile too large for one
/// request sent without its payload (and saying so), batches that fit one request.
@Suite struct ProfileExportQueueTests {
    private func item(_ id: String, json: Int? = nil) -> OTLPProfileEncoder.Item {
        var report = ReportFixture.report()
        report.id = id
        return .init(report: report, json: json.map { [UInt8](repeating: 0x20, count: $0) })
    }

    /// A size per item: its payload plus 100.
    private func size(_ item: OTLPProfileEncoder.Item) -> Int { 100 + (item.json?.count ?? 0) }

    @Test func theOldestGoFirstPastTheBound() {
        var queue = ProfileExportQueue(maxQueuedBytes: 1000, maxRequestBytes: 500)
        for i in 0..<10 { #expect(queue.add(item("r\(i)"), measure: size).dropped.isEmpty) }
        #expect(queue.queuedBytes == 1000)
        let added = queue.add(item("r10", json: 150), measure: size)
        #expect(added.dropped == ["r0", "r1", "r2"])
        #expect(queue.queuedBytes == 950)
        #expect(queue.entries.map(\.item.report.id).first == "r3")
    }

    @Test func aProfileTooLargeGoesWithoutItsPayloadAndSaysSo() throws {
        var queue = ProfileExportQueue(maxQueuedBytes: 10_000, maxRequestBytes: 500)
        let added = queue.add(item("big", json: 900), measure: size)
        #expect(added.cutFrom == 1000)
        let entry = try #require(queue.entries.first)
        #expect(entry.item.json == nil)
        #expect(entry.item.cut?.contains("900 bytes") == true)
        #expect(entry.bytes == 100)
    }

    @Test func oneTooLargeEvenWithoutPayloadIsRefused() {
        var queue = ProfileExportQueue(maxQueuedBytes: 10_000, maxRequestBytes: 1024)
        let added = queue.add(item("huge"), measure: { _ in 5000 })
        #expect(added.refused == 5000)
        #expect(queue.isEmpty)
    }

    @Test func aBatchIsWhatFitsOneRequestAndTriesAreCounted() {
        var queue = ProfileExportQueue(maxQueuedBytes: 10_000, maxRequestBytes: 350)
        for i in 0..<5 { _ = queue.add(item("r\(i)"), measure: size) }
        #expect(queue.batchCount == 3)
        #expect(queue.failed(3) == 1)
        #expect(queue.failed(2) == 2)
        #expect(queue.entries.map(\.attempts) == [2, 2, 1, 0, 0])
        #expect(queue.remove(3) == ["r0", "r1", "r2"])
        #expect(queue.queuedBytes == 200)
        #expect(queue.batchCount == 2)
    }

    @Test func theEncodedProfileCarriesTheCutAndTheResource() {
        var cut = item("r-cut")
        cut.cut = "original payload left out"
        let bytes = OTLPProfileEncoder.encode([cut], resource: ["service.name": "checkout"])
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("stallwatch.cut"))
        #expect(text.contains("original payload left out"))
        #expect(text.contains("service.name"))
        #expect(text.contains("checkout"))
    }
}
