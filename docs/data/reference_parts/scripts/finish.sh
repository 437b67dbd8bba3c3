#!/bin/bash
# usage: finish.sh [REPO]  -- after every shard of every run has finished: build the shipped reference from the
# parts in /work/lrdata/ref and everything rendered from it, in REPO (default /work/main):
#   pebench/data/reference.db       one slim merged run per reference run (core10, core26, chomsky3, field, fieldr)
#   pebench/data/seed_spread.json   the default protocol's seed spread, from the two 3-seed runs of the core five
#                                   (added beside the 3e-3 entries the one-rate nightly uses)
#   docs/leaderboard.html, docs/leaderboard_top.png, the reference's section of docs/findings.md
# The reference must not exist yet (pebench merge appends to an existing database). A dry run into a scratch
# copy: finish.sh /tmp/somewhere (a clone of the repository).
set -euo pipefail
repo=${1:-/work/main}
cd "$repo"
out=pebench/data/reference.db
if [ -e "$out" ]; then echo "$out exists: remove it first (merge would append)"; exit 2; fi
for name in ${NAMES:-core10 core26 chomsky3 field fieldr}; do  # NAMES: a dry run on some runs
  parts=(/work/lrdata/ref/${name}_*.db)
  [ -e "${parts[0]}" ] || { echo "no parts of $name"; exit 2; }
  echo "== merge $name: ${#parts[@]} parts"
  pebench merge --slim "${parts[@]}" -o "$out"
done
url="sqlite:///$out"  # relative to the repository: the page and the findings name the shipped file
pebench results --db "$url" --stale | tail -n 3 || true
for run in ${SPREAD_RUNS:-1 2}; do  # core10, core26: the core five at 3 seeds
  pebench seed-spread --db "$url" --run "$run" -o pebench/data/seed_spread.json
done
pebench report --db "$url" --run all -o docs/leaderboard.html --png docs/leaderboard_top.png
# the verdicts on the reference, in docs/findings.md (between markers, before "## On a run")
pebench findings --db "$url" --run all > /tmp/reference_findings.txt
python3 - /tmp/reference_findings.txt <<'PY'
import datetime, sys
from pathlib import Path
doc = Path("docs/findings.md")
text = doc.read_text()
start, end = "<!-- reference-findings:start -->", "<!-- reference-findings:end -->"
body = (f"{start}\n## On the shipped reference\n\n`pebench findings --db sqlite:///pebench/data/reference.db --run all`, "
        f"{datetime.date.today()} (the reference results that ship with pebench, at the default protocol):\n\n"
        f"```\n{Path(sys.argv[1]).read_text().rstrip()}\n```\n{end}\n\n")
if start in text:
    text = text[:text.index(start)] + body + text[text.index(end) + len(end):].lstrip("\n")
else:
    text = text.replace("## On a run\n", body + "## On a run\n", 1)
doc.write_text(text)
PY
ls -la "$out" docs/leaderboard.html docs/leaderboard_top.png
