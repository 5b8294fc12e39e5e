import StallwatchReport

/// What a report says about each function key of its call tree, resolved once per distinct
/// address while the tree is built: the tree's nodes and blamed stack read it instead of asking
/// the symbolizer again for every node. A key it does not hold is reported unknown.
package struct FrameTable: Sendable {
    private var infos: [FrameKey: SymbolInfo] = [:]

    /// An empty table.
    package init() {}

    /// A table naming every function of `tree` by `describe`, asked once per distinct key.
    package init(describing tree: CallTree, _ describe: (FrameKey) -> SymbolInfo) {
        tree.forEachFrame { key in
            if infos[key] == nil { infos[key] = describe(key) }
        }
    }

    /// What is known of `key`, `nil` when it was never resolved.
    package subscript(key: FrameKey) -> SymbolInfo? {
        get { infos[key] }
        set { infos[key] = newValue }
    }

    /// Whether `key` was resolved (without copying what is known of it).
    package func contains(_ key: FrameKey) -> Bool { infos.keys.contains(key) }

    /// What a report says of `key`: ``SymbolInfo/unknown`` when it was never resolved.
    package func info(_ key: FrameKey) -> SymbolInfo { infos[key] ?? .unknown }

    /// Number of keys resolved.
    package var count: Int { infos.count }

    /// Empties the table, keeping its storage: the watchdog refills it for every report.
    package mutating func removeAll() {
        infos.removeAll(keepingCapacity: true)
    }
}
