/// Text into HTML: everything a user or a device typed (a habit's name, a note, a trigger) goes
/// through ``escape(_:)`` before it is part of a page, in text and in attribute values alike.
public enum HTML {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// The pages, in the order of the navigation.
    static let pages: [(path: String, name: String)] = [
        ("/", "Today"), ("/water", "Water"), ("/vaping", "Vaping"), ("/habits", "Habits"), ("/workouts", "Workouts"),
        ("/sleep", "Sleep"), ("/body", "Body"), ("/stats", "Stats"), ("/timeline", "Timeline"), ("/entries", "Entries"),
    ]

    /// A whole page: the shared head (no script, no external resource), the navigation with
    /// `current` marked, and `body` (already HTML).
    /// `scripts`: the page's own scripts (``scripts``), each optional: a page is whole without them.
    /// `navigation`: false for the login page (nothing else opens before it).
    static func page(title: String, current: String, body: String, scripts: [String] = [], navigation: Bool = true) -> String {
        let nav = pages.map { page in
            page.path == current
                ? "<a href=\"\(page.path)\" aria-current=\"page\">\(escape(page.name))</a>"
                : "<a href=\"\(page.path)\">\(escape(page.name))</a>"
        }.joined(separator: " ")
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title)) · HealthGate</title>
            <style>\(style)</style>\(scripts.map { "\n<script src=\"\($0)\" defer></script>" }.joined())
            </head>
            <body>
            <header>\(navigation ? "<nav aria-label=\"Pages\">\(nav)</nav>" : "<p class=\"brand\">HealthGate</p>")</header>
            <main>
            <h1>\(escape(title))</h1>
            \(body)
            </main>
            </body>
            </html>

            """
    }

    /// One small style sheet: readable at phone width, contrast at WCAG AA, the Okabe-Ito
    /// colours (told apart by colour-blind readers) for series.
    static let style = """
        body{font-family:system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff;line-height:1.4}
        header{background:#0b3d62;padding:.5rem 1rem}
        nav a{color:#fff;margin-right:1rem;text-decoration:none}.brand{color:#fff;margin:0;font-weight:bold}
        nav a[aria-current=page]{text-decoration:underline;font-weight:bold}
        main{max-width:60rem;margin:0 auto;padding:1rem}
        .cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:1rem}
        .card{border:1px solid #c8c8c8;border-radius:.5rem;padding:.75rem}
        .card h2{font-size:1.1rem;margin:0 0 .5rem}
        .big{font-size:1.6rem;font-weight:bold}
        table{border-collapse:collapse;width:100%}
        th,td{text-align:left;padding:.25rem .4rem;border-bottom:1px solid #ddd;overflow-wrap:anywhere}
        .table{overflow-x:auto}
        td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
        figure{margin:1rem 0}
        svg{width:100%;height:auto;max-width:640px;display:block}
        svg text{font-size:16px;fill:#1a1a1a}
        .bar{fill:#0072B2}.bar.met{fill:#009E73}.goal{stroke:#D55E00;stroke-width:2;stroke-dasharray:6 4}
        .axis{stroke:#555;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}
        .series{fill:none;stroke:#0072B2;stroke-width:1.5}
        .muted{color:#555}
        details{margin-top:.5rem}details:not([open])>:not(summary){display:none}
        .barcell{width:40%}.hbar{display:inline-block;height:.8rem;background:#E69F00;min-width:2px}
        .visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
        .day.met{fill:#009E73}.day.some{fill:#56B4E9}.day.none{fill:#e4e4e4}.day.before{fill:#fff;stroke:#e4e4e4}.day.skipped{fill:#fff;stroke:#767676;stroke-dasharray:2 2}
        .key{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;vertical-align:middle}
        .key.met{background:#009E73}.key.some{background:#56B4E9}.key.none{background:#e4e4e4}.key.skipped{background:#fff;border:1px dashed #767676}
        .taps{display:flex;flex-wrap:wrap;gap:.5rem}.tap{display:inline}
        button{font-size:1rem;padding:.5rem .9rem;border-radius:.4rem;border:1px solid #0b3d62;background:#0b3d62;color:#fff}
        fieldset{border:1px solid #c8c8c8;border-radius:.5rem;margin:.5rem 0;display:grid;gap:.3rem;max-width:28rem}
        input,select{font-size:1rem;padding:.3rem;max-width:100%}
        .notice{background:#e6f4ea;border-left:4px solid #009E73;padding:.5rem}
        .problem{background:#fdecea;border-left:4px solid #D55E00;padding:.5rem}
        .facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2rem 1rem}.facts dt{font-weight:bold}.facts dd{margin:0;overflow-wrap:anywhere}
        .legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.2rem 1rem}
        .cursor{stroke:#1a1a1a;stroke-width:1}.readout{font-weight:bold;margin-left:.5rem}
        .trend{fill:none;stroke:#D55E00;stroke-width:2.5}.raw{fill:#0072B2;opacity:.6}
        .start{fill:#009E73;stroke:#fff;stroke-width:2}.finish{fill:#D55E00;stroke:#fff;stroke-width:2}
        .hbar.zone0{background:#999}.hbar.zone1{background:#56B4E9}.hbar.zone2{background:#009E73}.hbar.zone3{background:#F0E442}
        .hbar.zone4{background:#E69F00}.hbar.zone5{background:#D55E00}
        .stage-deep{fill:#0b3d62}.stage-light{fill:#56B4E9}.stage-rem{fill:#CC79A7}.stage-awake{fill:#E69F00}.stage-unknown{fill:#999}
        .key.stage-deep{background:#0b3d62}.key.stage-light{background:#56B4E9}.key.stage-rem{background:#CC79A7}
        .key.stage-awake{background:#E69F00}.key.stage-unknown{background:#999}
        button.delete{background:#fff;color:#a3290f;border-color:#a3290f}
        .span-workout{fill:#009E73}.mark-water{fill:#0072B2}.mark-vaping{fill:#D55E00}.mark-meal{fill:#E69F00}.mark-habit{fill:#CC79A7}
        .key.span-workout{background:#009E73}.key.mark-water{background:#0072B2}.key.mark-vaping{background:#D55E00}
        .key.mark-meal{background:#E69F00}.key.mark-habit{background:#CC79A7}
        .filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
        """

    /// The scripts the pages may load, by path.
    static let scripts = ["/static/tick.js": tickScript, "/static/crosshair.js": crosshairScript, "/static/live.js": liveScript]

    /// The box's card on the today page follows the daemon live: `/events/status` sends the card
    /// again whenever it changes (a device connects, a sync ends, the outbox moves), and this
    /// puts it in place of the one shown. Without it the page shows the card as it was made.
    static let liveScript = """
        "use strict";
        if (window.EventSource && document.getElementById("live-status")) {
          const source = new EventSource("/events/status");
          source.addEventListener("status", event => {
            const shown = document.getElementById("live-status");
            const next = document.createElement("template");
            next.innerHTML = event.data;
            const card = next.content.firstElementChild;
            if (shown && card && card.id === "live-status") shown.replaceWith(card);
          });
        }

        """

    /// The one script: the time since the last vaping session counts up every second. Elements
    /// with `data-tick` hold the seconds at the time the page was made in `data-value`.
    static let tickScript = """
        "use strict";
        const loaded = Date.now();
        function text(seconds) {
          const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
          const m = Math.floor(seconds % 3600 / 60), s = Math.floor(seconds % 60);
          const two = n => String(n).padStart(2, "0");
          return (d > 0 ? d + "d " + h + "h " : h > 0 ? h + "h " : "") + two(m) + "m " + two(s) + "s ago";
        }
        function tick() {
          for (const element of document.querySelectorAll("[data-tick]")) {
            element.textContent = text(Number(element.dataset.value) + (Date.now() - loaded) / 1000);
          }
        }
        tick();
        setInterval(tick, 1000);

        """

    /// A workout's charts share one time axis: pointing at any of them moves a line across all
    /// and shows each metric's value there (the nearest point drawn). The charts say where their
    /// plot area is (`data-left`, `data-width`, `data-x-max`).
    static let crosshairScript = """
        "use strict";
        const charts = [...document.querySelectorAll("svg.series-chart")].map(svg => ({
          svg, cursor: svg.querySelector(".cursor"),
          readout: svg.closest("figure")?.querySelector(".readout"),
          points: [...svg.querySelectorAll("polyline.series")].flatMap(line =>
            line.getAttribute("points").split(" ").map(p => p.split(",").map(Number))),
          left: Number(svg.dataset.left), width: Number(svg.dataset.width), unit: svg.querySelector("text")?.textContent ?? ""
        }));
        function show(share) {
          for (const c of charts) {
            const x = c.left + share * c.width;
            c.cursor.setAttribute("x1", x);
            c.cursor.setAttribute("x2", x);
            let best = null;
            for (const p of c.points) if (best === null || Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
            if (c.readout && best) c.readout.textContent = value(c, best[1]);
          }
        }
        function value(c, y) {
          const labels = [...c.svg.querySelectorAll(".y-label")].map(t => [Number(t.getAttribute("y")), Number(t.textContent)]);
          if (labels.length < 2) return "";
          const [y0, v0] = labels[0], [y1, v1] = labels[labels.length - 1];
          return (v0 + (y - y0) * (v1 - v0) / (y1 - y0)).toFixed(1) + " " + c.unit;
        }
        for (const c of charts) {
          c.svg.addEventListener("pointermove", event => {
            const box = c.svg.getBoundingClientRect(), scale = c.svg.viewBox.baseVal.width / box.width;
            const x = (event.clientX - box.left) * scale;
            show(Math.min(1, Math.max(0, (x - c.left) / c.width)));
          });
        }

        """
}
