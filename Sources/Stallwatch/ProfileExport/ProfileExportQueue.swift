import StallwatchExport

/// The profiles waiting to be sent, oldest first, bounded by their encoded size: pure (sizes come
/// from the measure it is given), so the bound, the cut and the batching are tested without a network.
struct ProfileExportQueue {
    struct Entry {
        var item: OTLPProfileEncoder.Item
        /// Its size encoded alone, which bounds what it adds to a request holding it.
        var bytes: Int
        /// Tries of requests that held it and failed.
        var attempts = 0
    }

    /// What adding a profile did.
    struct Added: Equatable {
        /// The profile went without its original payload, which would have made it this many bytes.
        var cutFrom: Int?
        /// Larger than a request may be even without its payload: not queued (its size).
        var refused: Int?
        /// Reports of the oldest profiles dropped to stay within the bound.
        var dropped: [String] = []
    }

    let maxQueuedBytes: Int
    let maxRequestBytes: Int
    private(set) var entries: [Entry] = []
    private(set) var queuedBytes = 0

    init(maxQueuedBytes: Int, maxRequestBytes: Int) {
        self.maxQueuedBytes = maxQueuedBytes
        self.maxRequestBytes = maxRequestBytes
    }

    var isEmpty: Bool { entries.isEmpty }

    /// Queues `item`, cut to fit one request when it must be, and drops the oldest profiles while
    /// the queue holds more than its bound.
    mutating func add(_ item: OTLPProfileEncoder.Item, measure: (OTLPProfileEncoder.Item) -> Int) -> Added {
        var added = Added()
        var item = item
        var bytes = measure(item)
        if bytes > maxRequestBytes, let json = item.json {
            item.json = nil
            item.cut = "original payload (the report, \(json.count) bytes) left out: the profile was \(bytes) bytes, over the \(maxRequestBytes)-byte request bound"
            added.cutFrom = bytes
            bytes = measure(item)
        }
        guard bytes <= maxRequestBytes else {
            added.refused = bytes
            return added
        }
        entries.append(Entry(item: item, bytes: bytes))
        queuedBytes += bytes
        while queuedBytes > maxQueuedBytes, let oldest = entries.first {
            entries.removeFirst()
            queuedBytes -= oldest.bytes
            added.dropped.append(oldest.item.report.id)
        }
        return added
    }

    /// How many of the oldest entries the next request holds: as many as fit in one request
    /// (always the first).
    var batchCount: Int {
        var total = 0, count = 0
        for entry in entries {
            if count > 0, total + entry.bytes > maxRequestBytes { break }
            total += entry.bytes
            count += 1
        }
        return count
    }

    /// The oldest `count` entries' items.
    func batch(_ count: Int) -> [OTLPProfileEncoder.Item] { entries.prefix(count).map(\.item) }

    /// Removes the oldest `count` entries (sent, or given up); returns their report ids.
    @discardableResult
    mutating func remove(_ count: Int) -> [String] {
        let gone = entries.prefix(count)
        queuedBytes -= gone.reduce(0) { $0 + $1.bytes }
        entries.removeFirst(min(count, entries.count))
        return gone.map(\.item.report.id)
    }

    /// Counts a failed try of the oldest `count` entries; returns the most tries any of them had.
    mutating func failed(_ count: Int) -> Int {
        var most = 0
        for i in entries.indices.prefix(count) {
            entries[i].attempts += 1
            most = max(most, entries[i].attempts)
        }
        return most
    }
}
