#!/bin/bash
# The extension track (issue 88), the last step, from the repository root once `track.sh` has finished every task and
# `track.sh scaffold` its runs: each task's --extend run, its --pose run and the scaffold run go into the shipped
# reference, each as a run of its own (pebench merge joins only parts of one configuration, and these differ in --task,
# --pose or --scaffold; a task's newest finished run of each holds the results of its resumed ones). Then: the
# reference must be current, the from-scratch findings unchanged, the lite tier's tasks unchanged (its digest moves);
# the page is rendered again and the track's answer printed to studies/extension/answer.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
BEFORE=${BEFORE:-/tmp/reference_before_extension.db}
cp pebench/data/reference.db "$BEFORE"
# one line per run to merge: its parts (the scaffold runs' shards are one run), the newest finished run of each
python3 - "$here" <<'PY' > /tmp/extension_parts.txt
import json, sqlite3, sys
from pathlib import Path
groups = {}
for db in sorted(Path(sys.argv[1]).glob("track_*.db")):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    newest = {}
    for rid, options in c.execute("select id, options from runs where status = 'finished' order by id"):
        o = json.loads(options or "{}")
        newest[(o.get("task"), o.get("encoding"), bool(o.get("pose")), o.get("scaffold"))] = rid
    for key, rid in newest.items():
        groups.setdefault(key, []).append(f"{db}::{rid}")
for key in sorted(groups, key=str):
    print(" ".join(groups[key]))
PY
while read -r parts; do
  # shellcheck disable=SC2086
  pebench merge --slim $parts -o sqlite:///pebench/data/reference.db
done < /tmp/extension_parts.txt
pebench results --stale --db reference                                   # must say 0 stale cells
pebench report --db reference --run all -o docs/leaderboard.html --png docs/leaderboard_top.png
python3 "$here/answer.py" > "$here/answer.md"
cat "$here/answer.md"
pebench findings --db "sqlite:///$BEFORE" --run all | tail -n +2 > /tmp/findings_before_extension.txt
pebench findings --db reference --run all | tail -n +2 > /tmp/findings_after_extension.txt
diff /tmp/findings_before_extension.txt /tmp/findings_after_extension.txt || true   # only the extension claims move
python3 studies/lite/choose.py --write 16
git diff --stat -- pebench/data/lite.json
