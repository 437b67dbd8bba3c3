#!/bin/bash
# usage: finish.sh [REPO]  -- after every shard of every run has finished: build the shipped reference from the
# parts in /work/lrdata/ref and everything rendered from it, in REPO (default /work/main):
#   pebench/data/reference.db       one slim merged run per reference run (core10, core26, chomsky3, field, fieldr)
#   pebench/data/seed_spread.json   the default protocol's seed spread, from the two 3-seed runs of the core five
#                                   (added beside the 3e-3 entries the one-rate nightly uses)
#   docs/leaderboard.html, docs/leaderboard_top.png, docs/data/reference_findings.md
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
url="sqlite:///$repo/$out"
pebench results --db "$url" --stale | tail -n 3 || true
for run in ${SPREAD_RUNS:-1 2}; do  # core10, core26: the core five at 3 seeds
  pebench seed-spread --db "$url" --run "$run" -o pebench/data/seed_spread.json
done
pebench report --db "$url" --run all -o docs/leaderboard.html --png docs/leaderboard_top.png
{
  echo "# The findings on the shipped reference"
  echo
  echo "\`pebench findings --db sqlite:///pebench/data/reference.db --run all\`, $(date +%F):"
  echo
  echo '```'
  pebench findings --db "$url" --run all
  echo '```'
} > docs/data/reference_findings.md
ls -la "$out" docs/leaderboard.html docs/leaderboard_top.png
