"""Inline SVG line plots for the HTML run report (utils/report_html.py): no library, no script.

    line_plot(name, title, series, xlabel, ylabel) -> '<svg class="plot" data-plot=NAME ...>'
A series is {"label", "xs", "ys"} (optional "dash", "markers", "color"); non-finite points are left out.
Each point carries a <title> (the browser's tooltip), so values are readable without script.
"""
import html
import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
          "#7f7f7f", "#bcbd22"]
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 66, 16, 28, 40
LEGEND_LINE = 16


def esc(text):
    return html.escape(str(text), quote=True)


def fmt(v):
    """A short label for a number: 3 significant digits, k/M for large ones, e-notation for tiny."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}" if a < 1e-3 else f"{v:.4g}"


def nice_ticks(lo, hi, count=5):
    """Round tick values covering [lo, hi] (about count of them) and the widened range."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi - lo <= 1e-12 * max(abs(lo), abs(hi), 1e-300):
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    ticks = [k * step for k in range(first, last + 1)]
    return ticks, ticks[0], ticks[-1]


def clean_points(xs, ys):
    return [(float(x), float(y)) for x, y in zip(xs, ys)
            if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]


def line_plot(name, title, series, xlabel="step", ylabel="", width=390, height=240, xlim=None, ylim=None,
              diagonal=False, from_zero=False):
    """An SVG line plot; series without finite points are dropped (None when none is left).
    from_zero: the y axis starts at 0 (quantities like memory, where a narrow axis makes a 0.2%
    change look like a jump)."""
    series = [dict(s, points=clean_points(s["xs"], s["ys"])) for s in series]
    series = [s for s in series if s["points"]]
    if not series:
        return None
    all_x = [x for s in series for x, _ in s["points"]]
    all_y = [y for s in series for _, y in s["points"]]
    if from_zero and not ylim:
        ylim = (min(0, min(all_y)), max(all_y) if max(all_y) > 0 else 1)
        ylim = (ylim[0], nice_ticks(*ylim)[2])  # the top at a tick
    xticks, x0, x1 = nice_ticks(*(xlim or (min(all_x), max(all_x))))
    yticks, y0, y1 = nice_ticks(*(ylim or (min(all_y), max(all_y))))
    if xlim:
        x0, x1, xticks = xlim[0], xlim[1], [t for t in xticks if xlim[0] <= t <= xlim[1]]
    if ylim:
        y0, y1, yticks = ylim[0], ylim[1], [t for t in yticks if ylim[0] <= t <= ylim[1]]
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    legend_h = LEGEND_LINE * len(series) + 6 if len(series) > 1 or series[0].get("label") else 0
    total_h = height + legend_h

    def px(x):
        return MARGIN_LEFT + (x - x0) / (x1 - x0) * plot_w

    def py(y):
        return MARGIN_TOP + (1 - (y - y0) / (y1 - y0)) * plot_h

    out = [f'<svg class="plot" data-plot="{esc(name)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{width}" height="{total_h}" viewBox="0 0 {width} {total_h}" role="img" '
           f'aria-label="{esc(title)}">',
           f"<title>{esc(title)}</title>",
           f'<rect x="0" y="0" width="{width}" height="{total_h}" fill="#fff"/>',
           f'<text x="{width / 2:.1f}" y="17" text-anchor="middle" class="plot-title">{esc(title)}</text>']
    for t in xticks:
        out.append(f'<line x1="{px(t):.1f}" y1="{MARGIN_TOP}" x2="{px(t):.1f}" y2="{MARGIN_TOP + plot_h}" '
                   f'class="grid"/>')
        out.append(f'<text x="{px(t):.1f}" y="{MARGIN_TOP + plot_h + 14}" text-anchor="middle">{fmt(t)}</text>')
    for t in yticks:
        out.append(f'<line x1="{MARGIN_LEFT}" y1="{py(t):.1f}" x2="{MARGIN_LEFT + plot_w}" y2="{py(t):.1f}" '
                   f'class="grid"/>')
        out.append(f'<text x="{MARGIN_LEFT - 5}" y="{py(t) + 4:.1f}" text-anchor="end" class="ytick">{fmt(t)}</text>')
    out.append(f'<rect x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{plot_w}" height="{plot_h}" class="frame"/>')
    out.append(f'<text x="{MARGIN_LEFT + plot_w / 2:.1f}" y="{MARGIN_TOP + plot_h + 32}" '
               f'text-anchor="middle">{esc(xlabel)}</text>')
    if ylabel:
        cy = MARGIN_TOP + plot_h / 2
        out.append(f'<text x="13" y="{cy:.1f}" text-anchor="middle" transform="rotate(-90 13 {cy:.1f})">'
                   f"{esc(ylabel)}</text>")
    if diagonal:
        out.append(f'<line x1="{px(x0):.1f}" y1="{py(y0):.1f}" x2="{px(x1):.1f}" y2="{py(y1):.1f}" '
                   f'class="diagonal"/>')
    for i, s in enumerate(series):
        color = s.get("color") or COLORS[i % len(COLORS)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s["points"])
        dash = ' stroke-dasharray="5 3"' if s.get("dash") else ""
        out.append(f'<polyline class="series" points="{points}" fill="none" stroke="{color}" '
                   f'stroke-width="1.8"{dash}/>')
        if s.get("markers", len(s["points"]) <= 30):
            label = esc(s.get("label") or title)
            for x, y in s["points"]:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.6" fill="{color}">'
                           f"<title>{label}: {esc(xlabel)} {fmt(x)}, {fmt(y)}</title></circle>")
    if legend_h:
        for i, s in enumerate(series):
            y = height + LEGEND_LINE * i + 8
            color = s.get("color") or COLORS[i % len(COLORS)]
            out.append(f'<line x1="{MARGIN_LEFT}" y1="{y:.1f}" x2="{MARGIN_LEFT + 22}" y2="{y:.1f}" '
                       f'stroke="{color}" stroke-width="2.5"/>')
            out.append(f'<text x="{MARGIN_LEFT + 28}" y="{y + 4:.1f}" class="legend">{esc(s.get("label", ""))}</text>')
    out.append("</svg>")
    return "\n".join(out)
