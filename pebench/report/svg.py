"""Small, dependency-free SVG charts for the leaderboard: line charts, heatmaps and panels of them.

Written by hand rather than with matplotlib because a page holds dozens of charts and must render from a database of
10,000 results in well under 10 s; string building takes milliseconds. Every text goes through
:func:`markupsafe.escape`, so names from the database are text, never markup. Label widths are measured with the
font's advance widths (:mod:`pebench.report.textwidth`), and the canvas is sized from them, so labels are not clipped
and never overlap the plot or each other.

For the page's script, each series' elements are one ``<g class="s" data-enc="NAME">`` and each legend row one
``<g class="lg" data-enc="NAME">``: the encoding filter hides series, a click on a legend row highlights that
encoding in every chart. Points carry a ``<title>`` (shown on hover) when the series has ``tips``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import escape

from pebench.report.textwidth import text_width

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MARKER_SHAPES = ("circle", "square", "triangle", "diamond", "triangle-down", "plus", "cross", "star", "hexagon")


@dataclass
class Series:
    name: str
    color: str
    marker: str = "circle"
    points: list[tuple[float, float, float | None]] = field(default_factory=list)
    """(x, y, half-width of the interval around y or None)."""
    tips: list[str] = field(default_factory=list)
    """A hover text per point (optional)."""


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.0f}"


def _text_w(s: str, size: float = 11, bold: bool = False) -> float:
    return text_width(s, size, bold)


def _fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:g}"
    return f"{v:.3g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    v = start
    while v <= hi + 1e-9 * step:
        ticks.append(round(v, 10))
        v += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks m * 10^k inside [lo, hi] (lo > 0): 1-2-5 steps, finer when the range is short."""
    if lo <= 0 or hi <= lo:
        return [lo]
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mults in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10**k for k in range(k0, k1 + 1) for m in mults if lo <= m * 10**k <= hi]
        if len(ticks) >= 3:
            return ticks
    return [float(f"{lo:.2g}"), float(f"{hi:.2g}")]


def marker(shape: str, x: float, y: float, color: str, r: float = 3.6) -> str:
    """An SVG marker of ``shape`` centred at (x, y)."""
    if shape == "circle":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="{color}"/>'
    if shape == "square":
        side = _f(1.8 * r)
        return f'<rect x="{_f(x - r * 0.9)}" y="{_f(y - r * 0.9)}" width="{side}" height="{side}" fill="{color}"/>'
    if shape in ("triangle", "triangle-down"):
        s = 1 if shape == "triangle" else -1
        pts = [(x, y - s * r * 1.2), (x - r * 1.1, y + s * r * 0.8), (x + r * 1.1, y + s * r * 0.8)]
    elif shape == "diamond":
        pts = [(x, y - r * 1.3), (x + r, y), (x, y + r * 1.3), (x - r, y)]
    elif shape == "hexagon":
        pts = [(x + r * 1.1 * math.cos(a), y + r * 1.1 * math.sin(a)) for a in (i * math.pi / 3 for i in range(6))]
    elif shape == "star":
        pts = [
            (x + (r * 1.4 if i % 2 == 0 else r * 0.6) * math.sin(i * math.pi / 5),
             y - (r * 1.4 if i % 2 == 0 else r * 0.6) * math.cos(i * math.pi / 5))
            for i in range(10)
        ]  # fmt: skip
    elif shape in ("plus", "cross"):
        d = r * 1.1
        if shape == "plus":
            segs = ((x - d, y, x + d, y), (x, y - d, x, y + d))
        else:
            segs = ((x - d, y - d, x + d, y + d), (x - d, y + d, x + d, y - d))
        return "".join(
            f'<line x1="{_f(a)}" y1="{_f(b)}" x2="{_f(c)}" y2="{_f(e)}" stroke="{color}" stroke-width="2"/>'
            for a, b, c, e in segs
        )
    else:
        return marker("circle", x, y, color, r)
    return '<polygon points="' + " ".join(f"{_f(a)},{_f(b)}" for a, b in pts) + f'" fill="{color}"/>'


class _Axis:
    """Maps data values to pixels: linear, log10 or log2 (log2 spaces evaluation lengths evenly)."""

    def __init__(self, lo: float, hi: float, a: float, b: float, scale: str = "linear", pad: float = 0.0) -> None:
        self.scale = scale
        tlo, thi = self._t(lo), self._t(hi)
        if thi == tlo:
            tlo, thi = tlo - 1, thi + 1
        span = thi - tlo
        self.tlo, self.thi = tlo - pad * span, thi + pad * span
        self.a, self.b = a, b

    def _t(self, v: float) -> float:
        if self.scale == "linear":
            return v
        v = max(v, 1e-12)
        return math.log2(v) if self.scale == "log2" else math.log10(v)

    def __call__(self, v: float) -> float:
        return self.a + (self._t(v) - self.tlo) / (self.thi - self.tlo) * (self.b - self.a)


REF_STYLE = {"vline": ("#475467", "5 4"), "hline": ("#667085", "2 3")}


def _legend(series: Sequence[Series], x: float, y: float, refs: Sequence[tuple[str, str]] = ()) -> list[str]:
    """Legend rows: one per series (line and marker; a click target for the page's script), then one per reference
    line ((kind, label))."""
    out = []
    width = legend_width(series) - 6
    for i, s in enumerate(series):
        yy = y + i * 17
        name = escape(s.name)
        out.append(f'<g class="lg" data-enc="{name}" tabindex="0" role="button" aria-pressed="false">'
                   f"<title>{name}: click to highlight it in every chart, again to show all</title>"
                   f'<rect x="{_f(x - 3)}" y="{_f(yy - 8)}" width="{_f(width)}" height="16" fill="#fff" '
                   'fill-opacity="0"/>')  # fmt: skip
        out.append(f'<line x1="{_f(x)}" y1="{_f(yy)}" x2="{_f(x + 22)}" y2="{_f(yy)}" stroke="{s.color}" '
                   'stroke-width="2"/>')  # fmt: skip
        out.append(marker(s.marker, x + 11, yy, s.color))
        out.append(f'<text x="{_f(x + 28)}" y="{_f(yy + 4)}">{name}</text></g>')
    for j, (kind, label) in enumerate(refs):
        yy = y + (len(series) + j) * 17 + 6
        color, dash = REF_STYLE[kind]
        out.append(f'<line x1="{_f(x)}" y1="{_f(yy)}" x2="{_f(x + 22)}" y2="{_f(yy)}" stroke="{color}" '
                   f'stroke-dasharray="{dash}" stroke-width="1.5"/>')  # fmt: skip
        out.append(f'<text x="{_f(x + 28)}" y="{_f(yy + 4)}" fill="#475467">{escape(label)}</text>')
    return out


def legend_width(series: Sequence[Series]) -> float:
    return 40 + max((_text_w(s.name) for s in series), default=0)


def _svg(width: float, height: float, body: Sequence[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" width="{_f(width)}" height="{_f(height)}" '
        f'font-family="{FONT}" font-size="11" fill="#1d2330">' + "".join(body) + "</svg>"
    )


def line_panel(
    series: Sequence[Series],
    x0: float,
    y0: float,
    w: float,
    h: float,
    *,
    x_scale: str = "linear",
    y_scale: str = "linear",
    x_ticks: Sequence[float] | None = None,
    y_range: tuple[float, float] | None = None,
    x_label: str = "",
    y_label: str = "",
    title: str = "",
    vlines: Sequence[tuple[float, str]] = (),
    hlines: Sequence[tuple[float, str]] = (),
    markers: bool = True,
) -> list[str]:
    """One chart's elements inside the box (x0, y0, w, h), axes labels included (left 52 px, bottom 34 px)."""
    left, bottom, top = 52, 34, 20 if title else 6
    px0, px1, py0, py1 = x0 + left, x0 + w - 8, y0 + h - bottom, y0 + top
    xs = [p[0] for s in series for p in s.points] + [v for v, _ in vlines]
    ys = [p[1] + (p[2] or 0) for s in series for p in s.points] + [p[1] - (p[2] or 0) for s in series for p in s.points]
    out: list[str] = []
    if title:
        out.append(f'<text x="{_f(x0 + 4)}" y="{_f(y0 + 13)}" font-size="12" font-weight="600">{escape(title)}</text>')
    if not xs or not ys:
        out.append(f'<text x="{_f((px0 + px1) / 2)}" y="{_f((py0 + py1) / 2)}" text-anchor="middle" '
                   f'fill="#667085">no data</text>')  # fmt: skip
        return out
    if y_range is None:
        lo, hi = min(ys), max(ys)
        if y_scale == "log":
            lo, hi = max(lo, 1e-9), max(hi, 1e-9)
            lo, hi = lo / 1.15, hi * 1.15
        else:
            pad = (hi - lo) * 0.06 or abs(hi) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
    else:
        lo, hi = y_range
    xa = _Axis(min(xs), max(xs), px0, px1, x_scale, pad=0.05)
    ya = _Axis(lo, hi, py0, py1, y_scale)
    yt = log_ticks(lo, hi) if y_scale == "log" else nice_ticks(lo, hi)
    for t in yt:
        yy = ya(t)
        out.append(f'<line x1="{_f(px0)}" y1="{_f(yy)}" x2="{_f(px1)}" y2="{_f(yy)}" stroke="#e4e7ec"/>')
        out.append(f'<text x="{_f(px0 - 6)}" y="{_f(yy + 4)}" text-anchor="end" fill="#475467">{_fmt_tick(t)}</text>')
    xt = list(x_ticks) if x_ticks is not None else nice_ticks(min(xs), max(xs))
    # thin out x tick labels that would collide
    last_end = -1e9
    for t in xt:
        xx = xa(t)
        label = _fmt_tick(t)
        out.append(f'<line x1="{_f(xx)}" y1="{_f(py0)}" x2="{_f(xx)}" y2="{_f(py0 + 4)}" stroke="#98a2b3"/>')
        half = _text_w(label) / 2
        if xx - half > last_end + 4:
            out.append(f'<text x="{_f(xx)}" y="{_f(py0 + 16)}" text-anchor="middle" fill="#475467">{label}</text>')
            last_end = xx + half
    out.append(f'<line x1="{_f(px0)}" y1="{_f(py0)}" x2="{_f(px1)}" y2="{_f(py0)}" stroke="#98a2b3"/>')
    out.append(f'<line x1="{_f(px0)}" y1="{_f(py0)}" x2="{_f(px0)}" y2="{_f(py1)}" stroke="#98a2b3"/>')
    if x_label:
        out.append(f'<text x="{_f((px0 + px1) / 2)}" y="{_f(py0 + 30)}" text-anchor="middle">{escape(x_label)}</text>')
    if y_label:
        cy = (py0 + py1) / 2
        out.append(f'<text transform="translate({_f(x0 + 12)},{_f(cy)}) rotate(-90)" text-anchor="middle">'
                   f"{escape(y_label)}</text>")  # fmt: skip
    for v, _label in hlines:
        if lo <= v <= hi:
            yy = ya(v)
            color, dash = REF_STYLE["hline"]
            out.append(f'<line x1="{_f(px0)}" y1="{_f(yy)}" x2="{_f(px1)}" y2="{_f(yy)}" stroke="{color}" '
                       f'stroke-dasharray="{dash}" stroke-width="1.5"/>')  # fmt: skip
    for v, _label in vlines:
        xx = xa(v)
        color, dash = REF_STYLE["vline"]
        out.append(f'<line x1="{_f(xx)}" y1="{_f(py0)}" x2="{_f(xx)}" y2="{_f(py1)}" stroke="{color}" '
                   f'stroke-dasharray="{dash}" stroke-width="1.5"/>')  # fmt: skip
    for s in series:
        pts = [(xa(x), ya(y), h_) for x, y, h_ in s.points]
        out.append(f'<g class="s" data-enc="{escape(s.name)}">')
        if any(p[2] is not None for p in s.points):  # the interval band, clipped to the axis range
            def clip(v: float) -> float:
                return min(max(v, lo), hi)

            upper = [(xa(x), ya(clip(y + (h_ or 0)))) for x, y, h_ in s.points]
            lower = [(xa(x), ya(clip(y - (h_ or 0)))) for x, y, h_ in s.points][::-1]
            out.append('<polygon points="' + " ".join(f"{_f(a)},{_f(b)}" for a, b in upper + lower)
                       + f'" fill="{s.color}" fill-opacity="0.14"/>')  # fmt: skip
        if len(pts) > 1:
            out.append('<polyline points="' + " ".join(f"{_f(a)},{_f(b)}" for a, b, _ in pts)
                       + f'" fill="none" stroke="{s.color}" stroke-width="1.8" stroke-linejoin="round"/>')  # fmt: skip
        if markers or len(pts) == 1:
            tips = s.tips if len(s.tips) == len(pts) else [""] * len(pts)
            for (a, b, _), tip in zip(pts, tips, strict=True):
                m = marker(s.marker, a, b, s.color)
                out.append(f"<g><title>{escape(tip)}</title>{m}</g>" if tip else m)
        out.append("</g>")
    return out


def line_chart(
    series: Sequence[Series], *, width: float = 560, height: float = 300, legend_w: float | None = None,
    refs_in_legend: bool = True, **kw: object,
) -> str:  # fmt: skip
    """One line chart with its legend on the right (the canvas grows to fit the legend, or is ``legend_w`` wide, so
    that small multiples line up); reference lines get legend rows unless ``refs_in_legend`` is False."""
    refs = [("vline", label) for _, label in kw.get("vlines") or ()]  # type: ignore[attr-defined]
    refs += [("hline", label) for _, label in kw.get("hlines") or ()]  # type: ignore[attr-defined]
    refs = refs if refs_in_legend else []
    lw = max(legend_width(series), 40 + max((_text_w(label) for _, label in refs), default=0), legend_w or 0)
    top = 30 if kw.get("title") else 16
    h = max(height, top + 20 + 17 * (len(series) + len(refs)))
    body = line_panel(series, 0, 0, width, h, **kw)  # type: ignore[arg-type]
    body += _legend(series, width + 10, top, refs)
    return _svg(width + 10 + lw, h, body, str(kw.get("title") or "chart"))


def panels(
    charts: Sequence[tuple[str, Sequence[Series]]], *, ncols: int = 3, w: float = 330, h: float = 220,
    y_ranges: Sequence[tuple[float, float] | None] | None = None, **kw: object,
) -> str:  # fmt: skip
    """Small multiples sharing one legend (the union of their series, by name, in the order first seen) on the
    right; ``y_ranges``: each chart's y range (None: from its data)."""
    legend: dict[str, Series] = {}
    for _, series in charts:
        for s in series:
            legend.setdefault(s.name, s)
    entries = list(legend.values())
    nrows = math.ceil(len(charts) / ncols)
    body: list[str] = []
    for i, (title, series) in enumerate(charts):
        r, c = divmod(i, ncols)
        y_range = y_ranges[i] if y_ranges is not None else None
        body += line_panel(series, c * w, r * h, w, h, title=title, y_range=y_range, **kw)  # type: ignore[arg-type]
    lw = legend_width(entries)
    width = ncols * w + 10 + lw
    height = max(nrows * h, 30 + 17 * len(entries))
    body += _legend(entries, ncols * w + 10, 24)
    return _svg(width, height, body, "small multiples")


def heatmap(
    rows: Sequence[tuple[str, str]],
    cols: Sequence[str],
    panels_: Sequence[tuple[str, Sequence[Sequence[float | None]]]],
    color: object,
    *,
    cell_w: float = 58,
    cell_h: float = 22,
) -> str:
    """Heatmap panels side by side: ``rows`` are (label, label colour), each panel (title, matrix rows x cols) with
    values in [0, 1] coloured by ``color(value) -> (fill, text colour)``, missing values grey."""
    label_w = 14 + max((_text_w(r[0], 11, bold=True) for r in rows), default=0)
    if cols:  # a panel is at least as wide as its title
        cell_w = max(cell_w, (max(_text_w(t, 12, bold=True) for t, _ in panels_) + 12) / len(cols))
    # column labels rotated by -40 degrees: they rise by sin 40° and reach right by cos 40° of their width
    col_w = [_text_w(c, 10.5) for c in cols]
    col_h = 14 + max(col_w, default=0) * math.sin(math.radians(40))
    top = 22 + col_h
    panel_w = cell_w * len(cols)
    body: list[str] = []
    for p, (title, matrix) in enumerate(panels_):
        x0 = label_w + p * (panel_w + 24)
        body.append(f'<text x="{_f(x0)}" y="14" font-size="12" font-weight="600">{escape(title)}</text>')
        for j, c in enumerate(cols):
            cx = x0 + (j + 0.5) * cell_w
            body.append(f'<text transform="translate({_f(cx)},{_f(top - 6)}) rotate(-40)" font-size="10.5">'
                        f"{escape(c)}</text>")  # fmt: skip
        for i, _ in enumerate(rows):
            for j, _ in enumerate(cols):
                v = matrix[i][j]
                fill, fg = color(v)  # type: ignore[operator]
                x, y = x0 + j * cell_w, top + i * cell_h
                body.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(cell_w - 1)}" height="{_f(cell_h - 1)}" '
                            f'fill="{fill}"/>')  # fmt: skip
                text = "–" if v is None else f"{v:.2f}"
                body.append(f'<text x="{_f(x + cell_w / 2)}" y="{_f(y + cell_h / 2 + 4)}" text-anchor="middle" '
                            f'font-size="10.5" fill="{fg}">{text}</text>')  # fmt: skip
    for i, (label, lc) in enumerate(rows):
        y = top + i * cell_h + cell_h / 2 + 4
        body.append(f'<text x="{_f(label_w - 8)}" y="{_f(y)}" text-anchor="end" font-weight="600" fill="{lc}">'
                    f"{escape(label)}</text>")  # fmt: skip
    width = label_w + len(panels_) * (panel_w + 24)
    if cols:  # the last panel's labels may reach past its right edge
        last_x0 = label_w + (len(panels_) - 1) * (panel_w + 24)
        reach = max(last_x0 + (j + 0.5) * cell_w + w * math.cos(math.radians(40)) + 4 for j, w in enumerate(col_w))
        width = max(width, reach)
    height = top + len(rows) * cell_h + 4
    # a colour bar under the panels
    bar_y = height + 8
    for k in range(50):
        fill, _ = color(k / 49)  # type: ignore[operator]
        body.append(f'<rect x="{_f(label_w + k * 3)}" y="{_f(bar_y)}" width="3.2" height="9" fill="{fill}"/>')
    body.append(f'<text x="{_f(label_w)}" y="{_f(bar_y + 22)}" font-size="10">0 = chance</text>')
    body.append(f'<text x="{_f(label_w + 150)}" y="{_f(bar_y + 22)}" font-size="10" text-anchor="end">'
                "1 = perfect</text>")  # fmt: skip
    return _svg(max(width, label_w + 160), bar_y + 28, body, "heatmap")
