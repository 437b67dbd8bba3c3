#!/bin/bash
# The second scale (issue 69), the last step: once all 8 shards have their parts/wide_I.done, from the repository
# root. Merges the parts into the shipped reference as one run (its options keep sweep ["d_model=256"], so the page
# and `pebench findings --run all` set it aside as another model size), checks the reference is still current,
# renders the page, and prints the answer (answer.py) to studies/scale2/answer.md. Leaves the reference before the
# merge in $BEFORE.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
BEFORE=${BEFORE:-/tmp/reference_before_scale2.db}
# shellcheck source=options.sh
. "$here/options.sh"  # N, the shard count run.sh uses
for i in $(seq "$N"); do [ -f "$here/parts/wide_$i.done" ] || { echo "wide $i not finished"; exit 1; }; done
for f in "$here"/parts/wide_*.db; do sqlite3 "$f" "pragma wal_checkpoint(TRUNCATE)" > /dev/null; done
cp pebench/data/reference.db "$BEFORE"
# a merge reads the current schema revision only (the parts were written at 0006, from the worktree at 7cca881)
for f in "$here"/parts/wide_*.db; do pebench db upgrade --db "sqlite:///$f"; done
pebench merge --slim "$here"/parts/wide_*.db -o sqlite:///pebench/data/reference.db
pebench results --stale --db sqlite:///pebench/data/reference.db          # must say 0 stale cells
pebench report --db sqlite:///pebench/data/reference.db --run all -o docs/leaderboard.html --png docs/leaderboard_top.png
python3 "$here/answer.py" > "$here/answer.md"
cat "$here/answer.md"
# the size run is set aside: neither the findings nor the lite tier's digest may change (check with git diff)
# (their first line names the database: left out)
pebench findings --db "sqlite:///$BEFORE" --run all | tail -n +2 > /tmp/findings_before_scale2.txt
pebench findings --db sqlite:///pebench/data/reference.db --run all | tail -n +2 > /tmp/findings_after_scale2.txt
if diff /tmp/findings_before_scale2.txt /tmp/findings_after_scale2.txt; then echo "findings: unchanged"; fi
python3 studies/lite/choose.py --write 16
git diff --stat -- pebench/data/lite.json studies/lite
