"""Small, dependency-free SVG charts for the leaderboard: line charts and panels of them.

Written by hand rather than with matplotlib because a page holds dozens of charts and must render from a database of
10,000 results in well under 10 s; string building takes milliseconds. Every text goes through
:func:`markupsafe.escape`, so names from the database are text, never markup. Label widths are measured with the
font's advance widths (:mod:`pebench.report.textwidth`), and the canvas is sized from them, so labels are not clipped
and never overlap the plot or each other.

For the page's script, each series' elements are one ``<g class="s" data-enc="NAME">`` and each legend row one
``<g class="lg" data-enc="NAME">``: the encoding filter hides series, a click on a legend row highlights that
encoding in every chart. A series carries one ``<title>`` (shown on hover over its line or markers) when it has a
``title``.

Small at a field's size (issue 65: 44 encodings x 36 tasks, 216 length plots): a marker is a ``<use>`` of one of the
shapes :func:`marker_defs` defines once per page, taking its series' fill; grid lines and ticks are one path each;
line coordinates are whole pixels; stroke widths of lines and legend rows come from the page's style sheet.
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
    title: str = ""
    """The series' hover text (optional; e.g. its value at every point): one ``<title>`` for the whole line."""


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.0f}"


def _i(v: float) -> str:
    """A coordinate of a line's or band's point: whole pixels (half a pixel is below what a reader sees, and a
    page at a field's size holds thousands of such points)."""
    return str(round(v))


def _points(pts: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{_i(a)},{_i(b)}" for a, b in pts)


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


STROKED = ("plus", "cross")
"""The marker shapes drawn as strokes (the others are filled)."""


def _shape(shape: str, r: float = 3.6) -> str:
    """A marker of ``shape`` centred at (0, 0), without a colour: it takes the fill (the stroke, for
    :data:`STROKED`) of the ``<use>`` that draws it."""
    if shape == "circle":
        return f'<circle r="{_f(r)}"/>'
    if shape == "square":
        return f'<rect x="{_f(-r * 0.9)}" y="{_f(-r * 0.9)}" width="{_f(1.8 * r)}" height="{_f(1.8 * r)}"/>'
    if shape in ("triangle", "triangle-down"):
        s = 1 if shape == "triangle" else -1
        pts = [(0, -s * r * 1.2), (-r * 1.1, s * r * 0.8), (r * 1.1, s * r * 0.8)]
    elif shape == "diamond":
        pts = [(0, -r * 1.3), (r, 0), (0, r * 1.3), (-r, 0)]
    elif shape == "hexagon":
        pts = [(r * 1.1 * math.cos(a), r * 1.1 * math.sin(a)) for a in (i * math.pi / 3 for i in range(6))]
    elif shape == "star":
        pts = [
            ((r * 1.4 if i % 2 == 0 else r * 0.6) * math.sin(i * math.pi / 5),
             -(r * 1.4 if i % 2 == 0 else r * 0.6) * math.cos(i * math.pi / 5))
            for i in range(10)
        ]  # fmt: skip
    elif shape in STROKED:
        d = _f(r * 1.1)
        path = f"M-{d} 0H{d}M0 -{d}V{d}" if shape == "plus" else f"M-{d} -{d}L{d} {d}M-{d} {d}L{d} -{d}"
        return f'<path d="{path}" stroke-width="2"/>'
    else:
        return _shape("circle", r)
    return '<polygon points="' + " ".join(f"{_f(a)},{_f(b)}" for a, b in pts) + '"/>'


def marker_defs() -> str:
    """The page's marker shapes, defined once (in an invisible ``<svg>`` the page holds before its charts):
    :func:`marker` draws one with a ``<use>`` of ``#pmN``, N its index in :data:`MARKER_SHAPES`."""
    shapes = "".join(f'<g id="pm{i}">{_shape(shape)}</g>' for i, shape in enumerate(MARKER_SHAPES))
    return (f'<svg width="0" height="0" style="position: absolute" aria-hidden="true"><defs>{shapes}</defs>'
            "</svg>")  # fmt: skip


def marker(shape: str, x: float, y: float, color: str | None = None) -> str:
    """A marker of ``shape`` centred at (x, y): a ``<use>`` of its shape in :func:`marker_defs`, in ``color`` or,
    without one, in the fill of the enclosing group (a series' ``<g fill>``; the stroked shapes need ``color``)."""
    i = MARKER_SHAPES.index(shape) if shape in MARKER_SHAPES else 0
    paint = "" if color is None else f' {"stroke" if shape in STROKED else "fill"}="{color}"'
    return f'<use href="#pm{i}" x="{_i(x)}" y="{_i(y)}"{paint}/>'


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
    """Legend rows: one per series (line and marker; a click target for the page's script, which makes it a button
    for the keyboard too: an invisible 16 px stroke, ``path.hit``, covers the row), then one per reference line
    ((kind, label)). The widths of a row's strokes come from the page's style sheet (``svg .lg path``)."""
    out = []
    width = legend_width(series) - 6
    for i, s in enumerate(series):
        yy = y + i * 17
        name = escape(s.name)
        out.append(f'<g class="lg" data-enc="{name}"><path class="hit" d="M{_f(x - 3)} {_f(yy)}h{_f(width)}" '
                   f'stroke="#fff0"/><path d="M{_f(x)} {_f(yy)}h22" stroke="{s.color}"/>'
                   f"{marker(s.marker, x + 11, yy, s.color)}"
                   f'<text x="{_f(x + 28)}" y="{_f(yy + 4)}">{name}</text></g>')  # fmt: skip
    for j, (kind, label) in enumerate(refs):
        yy = y + (len(series) + j) * 17 + 6
        color, dash = REF_STYLE[kind]
        out.append(f'<path d="M{_f(x)} {_f(yy)}h22" stroke="{color}" stroke-dasharray="{dash}" stroke-width="1.5"/>')
        out.append(f'<text x="{_f(x + 28)}" y="{_f(yy + 4)}" fill="#475467">{escape(label)}</text>')
    return out


def legend_width(series: Sequence[Series]) -> float:
    return 40 + max((_text_w(s.name) for s in series), default=0)


def _svg(width: float, height: float, body: Sequence[str], label: str) -> str:
    return (
        f'<svg role="img" aria-label="{escape(label)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" width="{_f(width)}" height="{_f(height)}" '
        f'font-family="{FONT}" font-size="11" fill="#1d2330">' + "".join(body) + "</svg>"
    )


def _frame(xa: _Axis, ya: _Axis, xt: Sequence[float], yt: Sequence[float], box: tuple[float, float, float, float],
           x_label: str, y_label: str, x0: float) -> list[str]:  # fmt: skip
    """A chart's grid lines, ticks, tick labels, axes and axis labels (each kind one path or one group of texts)."""
    px0, px1, py0, py1 = box
    grid = "".join(f"M{_f(px0)} {_f(ya(t))}H{_f(px1)}" for t in yt)
    out = [f'<path d="{grid}" stroke="#e4e7ec"/><g text-anchor="end" fill="#475467">']
    out += [f'<text x="{_f(px0 - 6)}" y="{_f(ya(t) + 4)}">{_fmt_tick(t)}</text>' for t in yt]
    out.append('</g><g text-anchor="middle" fill="#475467">')
    ticks, last_end = [], -1e9
    for t in xt:  # tick labels that would collide are left out
        xx, label = xa(t), _fmt_tick(t)
        ticks.append(f"M{_f(xx)} {_f(py0)}v4")
        half = _text_w(label) / 2
        if xx - half > last_end + 4:
            out.append(f'<text x="{_f(xx)}" y="{_f(py0 + 16)}">{label}</text>')
            last_end = xx + half
    out.append(f'</g><path d="{"".join(ticks)}M{_f(px0)} {_f(py0)}H{_f(px1)}M{_f(px0)} {_f(py0)}V{_f(py1)}" '
               'stroke="#98a2b3"/>')  # fmt: skip
    if x_label:
        out.append(f'<text x="{_f((px0 + px1) / 2)}" y="{_f(py0 + 30)}" text-anchor="middle">{escape(x_label)}</text>')
    if y_label:
        cy = (py0 + py1) / 2
        out.append(f'<text transform="translate({_f(x0 + 12)},{_f(cy)}) rotate(-90)" text-anchor="middle">'
                   f"{escape(y_label)}</text>")  # fmt: skip
    return out


def _marks(s: Series, xa: _Axis, ya: _Axis, lo: float, hi: float, markers: bool) -> str:
    """One series: a ``<g class="s">`` (filled with its colour, for the markers) holding its hover title, its
    interval band clipped to the axis range, its line and its markers."""
    pts = [(xa(x), ya(y)) for x, y, _ in s.points]
    drawn = markers or len(pts) == 1
    band = any(p[2] is not None for p in s.points)
    fill = f' fill="{s.color}"' if drawn or band else ""  # the markers' and the band's, when there are any
    out = [f'<g class="s" data-enc="{escape(s.name)}"{fill}>']
    if s.title:
        out.append(f"<title>{escape(s.title)}</title>")
    if band:
        upper = [(xa(x), ya(min(max(y + (h or 0), lo), hi))) for x, y, h in s.points]
        lower = [(xa(x), ya(min(max(y - (h or 0), lo), hi))) for x, y, h in s.points][::-1]
        out.append(f'<polygon points="{_points(upper + lower)}" fill-opacity="0.14"/>')
    if len(pts) > 1:
        out.append(f'<polyline points="{_points(pts)}" fill="none" stroke="{s.color}"/>')
    if drawn:
        color = s.color if s.marker in STROKED else None  # a filled shape takes the group's fill
        out += [marker(s.marker, a, b, color) for a, b in pts]
    out.append("</g>")
    return "".join(out)


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
    """One chart's elements inside the box (x0, y0, w, h), axes labels included (left 52 px, bottom 34 px). A line's
    width and joins come from the page's style sheet (``svg .s polyline``)."""
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
    xt = list(x_ticks) if x_ticks is not None else nice_ticks(min(xs), max(xs))
    out += _frame(xa, ya, xt, yt, (px0, px1, py0, py1), x_label, y_label, x0)
    for v, _label in hlines:
        if lo <= v <= hi:
            color, dash = REF_STYLE["hline"]
            out.append(f'<path d="M{_f(px0)} {_f(ya(v))}H{_f(px1)}" stroke="{color}" stroke-dasharray="{dash}" '
                       'stroke-width="1.5"/>')  # fmt: skip
    for v, _label in vlines:
        color, dash = REF_STYLE["vline"]
        out.append(f'<path d="M{_f(xa(v))} {_f(py0)}V{_f(py1)}" stroke="{color}" stroke-dasharray="{dash}" '
                   'stroke-width="1.5"/>')  # fmt: skip
    out += [_marks(s, xa, ya, lo, hi, markers) for s in series]
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

