"""The leaderboard: one self-contained HTML page rendered from the results database.

:func:`render_report` selects the rows (:mod:`~pebench.report.data`), assembles tables and the leaderboard with the
scoring layer (:mod:`~pebench.report.views`, :mod:`pebench.analysis.scoring`), draws the plots and attention maps
(:mod:`~pebench.report.charts`, :mod:`~pebench.report.svg`, :mod:`~pebench.report.colors`) and renders the Jinja2
templates in ``templates/`` (:mod:`~pebench.report.page`). Plots are inline SVG (length plots as small multiples by
encoding family, :mod:`~pebench.report.families`), attention maps PNG data URIs (:mod:`~pebench.report.attn`), and
the one script -- sorting, the filter, legend highlighting, attention values on hover -- is inlined too: the page opens
from disk with no network. The definitions it uses (ID/OOD,
normalised score, aggregate, gap, ties) are those of :mod:`pebench.analysis.scoring`, printed on the page too.
"""

from pebench.report.data import RUN_CHOICES, ReportError, build_context, previous_comparable, select
from pebench.report.page import RenderInfo, render_html, render_report
from pebench.report.views import Cell, assemble

__all__ = [
    "RUN_CHOICES", "Cell", "RenderInfo", "ReportError", "assemble", "build_context", "previous_comparable",
    "render_html", "render_report", "select",
]  # fmt: skip
