import StallwatchReport
/// The flame graph's interactions, written for this project: the boxes carry their position in
/// samples (`data-x`, `data-c`), so zooming is a re-scale of every box to the clicked one's range.
enum FlameGraphScript {
    static let source = #"""
    (function () {
      "use strict";
      var svg = document.documentElement;
      var total = +svg.getAttribute("data-total");
      var pad = +svg.getAttribute("data-padding");
      var width = +svg.getAttribute("width") - 2 * pad;
      var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
      var details = document.getElementById("details");
      var matched = document.getElementById("matched");
      var reset = document.getElementById("reset");

      function percent(count) { return total > 0 ? (100 * count / total).toFixed(1) + "%" : "0%"; }
      function fit(name, w) {
        var room = Math.floor((w - 6) / 7);
        if (room < 3) return "";
        return name.length <= room ? name : name.slice(0, room - 2) + "..";
      }
      // Shows the samples in [start, start + span) across the whole width.
      function layout(start, span) {
        var scale = width / span;
        frames.forEach(function (f) {
          var x = +f.getAttribute("data-x"), c = +f.getAttribute("data-c");
          var left = Math.max(x, start), right = Math.min(x + c, start + span);
          if (right <= left) { f.classList.add("outside"); return; }
          f.classList.remove("outside");
          var rect = f.querySelector("rect"), text = f.querySelector("text");
          var px = pad + (left - start) * scale, w = (right - left) * scale;
          rect.setAttribute("x", px.toFixed(2));
          rect.setAttribute("width", w.toFixed(2));
          text.setAttribute("x", (px + 3).toFixed(2));
          text.textContent = fit(f.getAttribute("data-n"), w);
        });
      }
      function zoom(f) {
        if (!f) { layout(0, total); reset.style.display = "none"; return; }
        layout(+f.getAttribute("data-x"), +f.getAttribute("data-c"));
        reset.style.display = "";
      }
      function search(pattern) {
        var re;
        try { re = new RegExp(pattern); } catch (e) { matched.textContent = "bad pattern"; return; }
        var spans = [];
        frames.forEach(function (f) {
          var hit = pattern !== "" && re.test(f.getAttribute("data-n"));
          f.classList.toggle("match", hit);
          if (hit) spans.push([+f.getAttribute("data-x"), +f.getAttribute("data-x") + +f.getAttribute("data-c")]);
        });
        // Nested matches cover the same samples: count the union of their ranges.
        spans.sort(function (a, b) { return a[0] - b[0]; });
        var covered = 0, end = -1;
        spans.forEach(function (s) {
          if (s[1] <= end) return;
          covered += s[1] - Math.max(s[0], end);
          end = s[1];
        });
        matched.textContent = pattern === "" ? " " : "Matched: " + percent(covered);
      }
      frames.forEach(function (f) {
        f.addEventListener("mouseover", function () {
          details.textContent = f.getAttribute("data-n") + " \u2014 " + f.getAttribute("data-c") +
            " samples (" + percent(+f.getAttribute("data-c")) + ")";
        });
        f.addEventListener("mouseout", function () { details.textContent = " "; });
        f.addEventListener("click", function () { zoom(f); });
      });
      reset.addEventListener("click", function () { zoom(null); });
      document.getElementById("search").addEventListener("click", function () {
        var pattern = window.prompt("Search frames (regular expression)", "");
        if (pattern !== null) search(pattern);
      });
      window.addEventListener("keydown", function (e) {
        if ((e.ctrlKey || e.metaKey) && e.key === "f") {
          e.preventDefault();
          var pattern = window.prompt("Search frames (regular expression)", "");
          if (pattern !== null) search(pattern);
        } else if (e.key === "Escape") { zoom(null); search(""); }
      });
      var query = /[?&]s=([^&]*)/.exec(window.location.search);
      if (query) search(decodeURIComponent(query[1]));
      layout(0, total);
    })();
    """#
}
