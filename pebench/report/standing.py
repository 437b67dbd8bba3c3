"""Your standing in the terminal (issue 71 item 4): with ``--with-reference``, the closing summary says where each of
the run's encodings stands among the reference's -- overall (its rank, the rank's 95% range and its tie group, from
:mod:`pebench.analysis.ranking`, and the reference encodings just above and below it) and on each task (its rank
by the cell's mean over seeds, and whether it is within noise of the task's best cell: the difference is within
1.96 * sqrt(v_best + v_yours), each v the variance of a cell's mean, :func:`pebench.analysis.ranking.cell_stats`).
The page shows the same; these lines are for the terminal, where a run ends.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pebench.analysis.ranking import Z95, Ranked, cell_stats
from pebench.report.views import Assembled


def _neighbour(r: Ranked | None, where: str) -> str:
    return f"{where}: {r.encoding} {r.score:.3f} (rank {r.rank})" if r is not None else f"{where}: none"


def overall_lines(assembled: Assembled, encoding: str) -> list[str]:
    """``encoding``'s aggregate with its interval, its rank and range among the full rows, its tie group, and the
    rows just above and below it (or why it is ranked apart)."""
    ranking = assembled.ranking
    row = ranking.row(encoding) if ranking is not None else None
    if ranking is None or row is None:
        return [f"{encoding}: no OOD score to rank"]
    score = f"OOD score {row.score:.3f} [{row.low:.3f}, {row.high:.3f}]"
    if row.partial:
        return [f"{encoding}: {score} over its own {row.n_tasks} of {len(ranking.tasks)} tasks: ranked apart (a rank "
                "needs every task the others ran)"]  # fmt: skip
    full = [r for r in ranking.rows if not r.partial]
    i = full.index(row)
    mates = [r.encoding for r in full if r.group == row.group and r.encoding != encoding]
    tie = (f"tied within noise with {len(mates)} ({', '.join(mates[:6])}{', ...' if len(mates) > 6 else ''})"
           if mates else "alone in its tie group")  # fmt: skip
    over = f" over the {len(ranking.tasks)} tasks shown" if len(ranking.tasks) != 1 else " on the task shown"
    return [f"{encoding}: {score}{over}, rank {row.rank} of {len(full)} (95% range {row.range_text}); tie group "
            f"{row.group}, {tie}",
            f"  {_neighbour(full[i - 1] if i > 0 else None, 'just above')}; "
            f"{_neighbour(full[i + 1] if i + 1 < len(full) else None, 'just below')}"]  # fmt: skip


def task_lines(assembled: Assembled, encoding: str) -> list[str]:
    """Per task ``encoding`` ran: its OOD score (mean over seeds), its rank among the encodings on the task, and
    whether it is the best, within noise of the best, or below it beyond noise."""
    keys = sorted(k for k in {key for per in assembled.ood_per_seed.values() for key in per}
                  if k in assembled.ood_per_seed.get(encoding, {}))  # fmt: skip
    if not keys:
        return []
    width = max(len(k) for k in keys)
    lines = ["  per task: OOD score, rank among the encodings that ran it, and the gap to the best against the 95% "
             "interval of the two cells' seed noise:"]  # fmt: skip
    for key in keys:
        sigma = assembled.sigmas.get(key)
        cells = {e: cell_stats(per[key], sigma) for e, per in assembled.ood_per_seed.items() if per.get(key)}
        m, v = cells[encoding]
        best = max(cells, key=lambda e: cells[e][0])
        rank = 1 + sum(other[0] > m for other in cells.values())
        mb, vb = cells[best]
        if best == encoding or mb == m:
            verdict = "best"
        elif v is None or vb is None:
            verdict = f"below the best ({best} {mb:.3f}; noise unmeasured)"
        elif mb - m <= Z95 * math.sqrt(v + vb):
            verdict = f"within noise of the best ({best} {mb:.3f})"
        else:
            verdict = f"below the best beyond noise ({best} {mb:.3f})"
        lines.append(f"    {key:<{width}}  {m:.3f}  rank {rank:>2} of {len(cells):<2}  {verdict}")
    return lines


def terminal_lines(assembled: Assembled, yours: Sequence[str]) -> list[str]:
    """The standing of each of ``yours`` among the reference's encodings: :func:`overall_lines` and
    :func:`task_lines`."""
    lines = []
    for encoding in yours:
        lines += overall_lines(assembled, encoding) + task_lines(assembled, encoding)
    return lines
