#!/bin/bash
# The diagnostics run (issue 89), the last step, from the repository root once both shards of `run.sh` have finished:
# the newest finished run of each shard's database goes into the shipped reference as one run of its own (marked
# --diagnostics-run: set aside from the ranking). Then: the reference must be current, the findings other than the
# five mechanism claims unchanged, the lite tier's tasks unchanged (its digest moves), the page rendered again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
BEFORE=${BEFORE:-/tmp/reference_before_diagnostics.db}
cp pebench/data/reference.db "$BEFORE"
parts=$(python3 - "$here" <<'PY'
import sqlite3, sys
from pathlib import Path
out = []
for db in sorted(Path(sys.argv[1]).glob("run_*.db")):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (rid,) = c.execute("select max(id) from runs where status = 'finished'").fetchone()
    if rid is None:
        sys.exit(f"{db}: no finished run; run studies/diagnostics/run.sh on its shard first")
    out.append(f"{db}::{rid}")
print(" ".join(out))
PY
)
# shellcheck disable=SC2086
pebench merge --slim $parts -o sqlite:///pebench/data/reference.db
pebench results --stale --db reference                                   # must say 0 stale cells
pebench report --db reference --run all -o docs/leaderboard.html --png docs/leaderboard_top.png
pebench findings --db "sqlite:///$BEFORE" --run all | tail -n +2 > /tmp/findings_before_diagnostics.txt
pebench findings --db reference --run all | tail -n +2 > /tmp/findings_after_diagnostics.txt
diff /tmp/findings_before_diagnostics.txt /tmp/findings_after_diagnostics.txt || true   # only the mechanism claims
python3 studies/lite/choose.py --write 16
git diff --stat -- pebench/data/lite.json
