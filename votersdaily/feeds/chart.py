"""A small inline SVG bar chart of items per run: no script, no external file, readable by screen readers."""

from __future__ import annotations

from markupsafe import Markup, escape

from .health import BROKEN, DROP, EMPTY, LABELS, MANUAL, Run

WIDTH, HEIGHT, PAD = 240, 60, 2
#: Colours with at least 3:1 contrast against white (WCAG non-text contrast).
FILL = {"ok": "#1e7b34", DROP: "#b06000", EMPTY: "#5f6368", BROKEN: "#c5221f", MANUAL: "#70757a"}


def runs_chart(name: str, runs: list[Run]) -> Markup:
    """Bars oldest → newest; broken runs are a red cross, empty runs a grey tick at the axis."""
    ordered = list(reversed(runs))
    if not ordered:
        return Markup("")
    top = max([r.items for r in ordered] + [1])
    slot = (WIDTH - 2 * PAD) / max(len(ordered), 1)
    bar = min(max(slot * 0.7, 1), 16)
    base = HEIGHT - 10
    shapes = []
    for i, run in enumerate(ordered):
        x = PAD + i * slot + (slot - bar) / 2
        tip = escape("%s: %s, %d items" % (run.access_datetime, LABELS[run.status], run.items))
        colour = FILL.get(run.status, FILL["ok"])
        if run.status == BROKEN:
            cx, s = x + bar / 2, min(bar / 2, 5)
            shapes.append(
                '<g class="run broken"><title>%s</title><path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" '
                'stroke="%s" stroke-width="2"/></g>'
                % (tip, cx - s, base - 2 * s, cx + s, base, cx - s, base, cx + s, base - 2 * s, colour)
            )
            continue
        h = max((base - 4) * run.items / top, 2 if run.status in (EMPTY, DROP) else 0.5)
        shapes.append(
            '<rect class="run %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>'
            % (run.status, x, base - h, bar, h, colour, tip)
        )
    label = "Items per run for %s, oldest to newest: %s" % (
        name,
        ", ".join(
            "%d%s" % (r.items, "" if r.status == "ok" else " (%s)" % LABELS[r.status]) for r in ordered
        ),
    )
    svg = (
        '<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" '
        'xmlns="http://www.w3.org/2000/svg">'
        '<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#5f6368" stroke-width="1"/>%s'
        '<text x="%d" y="%d" font-size="9" fill="#3c4043">max %d</text></svg>'
        % (
            WIDTH,
            HEIGHT,
            WIDTH,
            HEIGHT,
            escape(label),
            base,
            WIDTH,
            base,
            "".join(shapes),
            PAD,
            HEIGHT - 1,
            top,
        )
    )
    return Markup(svg)  # noqa: S704 - every text in it is escaped; the rest are numbers and fixed names
