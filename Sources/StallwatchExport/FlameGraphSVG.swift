import StallwatchReport
/// A flame graph of stalls as one self-contained SVG file (no network, no fonts or scripts from
/// elsewhere): hover a box to see its frame and samples, click to zoom into it, search (the
/// Search button, Ctrl+F, or `?s=regex` in the URL) to highlight matching frames. The
/// application's frames are drawn in warm colours, the system's in cool ones.
package enum FlameGraphSVG {
    /// Layout constants, shared with the script (which reads them from the document).
    static let width = 1200, boxHeight = 16, padding = 10, top = 56, bottom = 30

    /// The SVG document for `profile`, titled `title` with `subtitle` below it.
    package static func render(_ profile: StallProfile, title: String, subtitle: String) -> String {
        let layout = FlameGraphLayout(profile)
        let height = top + layout.height * boxHeight + bottom
        let scale = Double(width - 2 * padding) / Double(max(layout.total, 1))
        var out = """
        <?xml version="1.0" encoding="UTF-8" standalone="no"?>
        <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(width)" height="\(height)" \
        viewBox="0 0 \(width) \(height)" data-total="\(layout.total)" data-padding="\(padding)">
        <style>
        text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: #000; }
        .title { font-size: 17px; text-anchor: middle; }
        .subtitle { font-size: 12px; text-anchor: middle; fill: #444; }
        g.f text { pointer-events: none; }
        g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }
        g.f.match rect { fill: #e600e6; }
        g.f.outside { display: none; }
        .button { fill: #206; cursor: pointer; }
        </style>
        <rect x="0" y="0" width="\(width)" height="\(height)" fill="#f8f8f2"/>
        <text class="title" x="\(width / 2)" y="22">\(xml(title))</text>
        <text class="subtitle" x="\(width / 2)" y="40">\(xml(subtitle))</text>
        <text id="reset" class="button" x="\(padding)" y="22" style="display:none">Reset zoom</text>
        <text id="search" class="button" x="\(width - padding)" y="22" text-anchor="end">Search</text>
        <text id="matched" x="\(width - padding)" y="\(height - 10)" text-anchor="end"> </text>
        <text id="details" x="\(padding)" y="\(height - 10)"> </text>

        """
        for box in layout.boxes {
            let x = Double(padding) + Double(box.start) * scale
            let w = Double(box.count) * scale
            let y = height - bottom - (box.depth + 1) * boxHeight
            let name = xml(box.name)
            let share = percent(box.count, of: layout.total)
            out += """
            <g class="f" data-n="\(name)" data-x="\(box.start)" data-c="\(box.count)" data-d="\(box.depth)">\
            <title>\(name) (\(box.count) samples, \(share))</title>\
            <rect x="\(fixed(x))" y="\(y)" width="\(fixed(w))" height="\(boxHeight - 1)" rx="2" fill="\(color(box))"/>\
            <text x="\(fixed(x + 3))" y="\(y + boxHeight - 4)">\(xml(fitted(box.name, width: w)))</text></g>

            """
        }
        out += "<script type=\"text/ecmascript\"><![CDATA[\n\(FlameGraphScript.source)\n]]></script>\n</svg>\n"
        return out
    }

    /// The part of `name` that fits `width` pixels at about 7 px a character, with ".." when cut.
    static func fitted(_ name: String, width: Double) -> String {
        let room = Int((width - 6) / 7)
        if room < 3 { return "" }
        return name.count <= room ? name : String(name.prefix(room - 2)) + ".."
    }

    /// A colour from the name, so a function keeps its colour between graphs: warm hues for the
    /// application's frames, cool ones for the system's.
    static func color(_ box: FlameGraphLayout.Box) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in box.name.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let a = Int(hash % 55), b = Int((hash / 55) % 80)
        if box.origin == .system { return "rgb(\(90 + a),\(150 + b / 2),\(200 + a))" }
        return "rgb(\(205 + a),\(80 + b),\(40 + a / 2))"
    }

    private static func percent(_ count: Int, of total: Int) -> String {
        let tenths = total > 0 ? (count * 1000 + total / 2) / total : 0
        return "\(tenths / 10).\(tenths % 10)%"
    }

    private static func fixed(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = abs(hundredths % 100)
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// Text for XML content and attributes; control characters (not allowed in XML 1.0) are
    /// shown as escapes.
    package static func xml(_ text: String) -> String {
        var out = ""
        for scalar in TerminalSafeText.escaped(text).unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
