#!/bin/bash
# Added seeds (issue 65 item 2), the last step: once every shard has its .done, from the repository root.
# PARTS: the finished part databases (seedsA_1..8.db, seedsB_1..12.db). Leaves the shipped reference before the merge
# in $BEFORE, for the before/after table of the note and the README.
set -euo pipefail
: "${PARTS:?}"
BEFORE=${BEFORE:-/tmp/reference_before.db}
for i in 1 2 3 4 5 6 7 8; do [ -f "$PARTS/seedsA_$i.done" ] || { echo "seedsA $i not finished"; exit 1; }; done
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do [ -f "$PARTS/seedsB_$i.done" ] || { echo "seedsB $i not finished"; exit 1; }; done
cp pebench/data/reference.db "$BEFORE"
# the parts were written at schema revision 0005 (the worktree at 82ba707); a merge reads the current revision only
for f in "$PARTS"/seeds[AB]_*.db; do pebench db upgrade --db "sqlite:///$f"; done
# one run per call (the two differ in --task): runs 6 and 7 of the reference
pebench merge --slim "$PARTS"/seedsA_*.db -o sqlite:///pebench/data/reference.db
pebench merge --slim "$PARTS"/seedsB_*.db -o sqlite:///pebench/data/reference.db
pebench results --stale --db sqlite:///pebench/data/reference.db          # must say 0 stale cells
pebench report --db sqlite:///pebench/data/reference.db --run all -o docs/leaderboard.html --png docs/leaderboard_top.png
python3 studies/lite/choose.py --write 16                                  # the lite tier's digest of the reference
python3 studies/reference/seeds/ranks.py "sqlite:///$BEFORE" sqlite:///pebench/data/reference.db --top 14
