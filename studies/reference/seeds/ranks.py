"""The top of the page's ranking (``--run all``) of one or more reference databases, side by side: each encoding's
OOD aggregate with the half-width of its 95% interval, its rank with the 95% rank range, and its tie group -- the
table of issue 65's note (before and after the added seeds).

    python studies/reference/seeds/ranks.py sqlite:///pebench/data/reference.db sqlite:///merged.db [--top 14]
"""

from __future__ import annotations

import argparse
import sys

from pebench.report import build_context


def rows(url: str) -> dict[str, str]:
    """Encoding -> ``0.547 ±0.033, 1 (1), group 1`` for every ranked row of the page of ``url``."""
    out = {}
    for e in build_context(url, "all")["entries"]:
        if e.ranked is None:  # ranked apart (a partial row)
            continue
        out[e.encoding] = f"{e.ood.value:.3f} {e.ood.half_text or '±0'}, {e.rank} ({e.rank_text}), group {e.group}"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--top", type=int, default=14, help="rows of the first database's order (default 14)")
    args = parser.parse_args(argv)
    tables = [rows(u) for u in args.urls]
    print("| encoding | " + " | ".join(args.urls) + " |")
    print("|---|" + "---|" * len(args.urls))
    for enc in list(tables[0])[: args.top]:
        print(f"| {enc} | " + " | ".join(t.get(enc, "–") for t in tables) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
