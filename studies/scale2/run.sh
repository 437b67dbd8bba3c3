#!/bin/bash
# The second model scale (issue 69): twelve encodings on nine tasks (choose_tasks.py) at d_model 256 (4x the
# default's matrix parameters), one seed, learning rate 1e-3, as the sweep point d_model256 (never ranked with the
# default size).
# Resumable: rerun it; --reuse and the checkpoint cache resume each shard. Each finished shard leaves parts/wide_I.done.
# Usage: REF=/path/to/worktree bash studies/scale2/run.sh [FIRST LAST]   (shards FIRST..LAST of 8; default all)
# Two runners (one per core) may run it at once: a shard another runner holds (its lock) is left to it.
# REF: a git worktree at one commit (`git worktree add $REF <commit>`), from which every shard runs: `pebench merge`
# refuses parts of different commits, and a run of 8-9 CPU-hours spans sessions that commit. The parts, the logs and
# the .done files go to this checkout's studies/scale2/ (commit the parts as they finish).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
: "${REF:?set REF to a git worktree at one commit (git worktree add DIR COMMIT)}"
cd "$REF"
# shellcheck source=options.sh
. "$here/options.sh"
mkdir -p "$here/parts" "$here/logs"
for i in $(seq "${1:-1}" "${2:-$N}"); do
  [ -f "$here/parts/wide_$i.done" ] && continue
  exec 9>"$here/parts/wide_$i.lock"
  flock -n 9 || { exec 9>&-; continue; }
  OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding "$ENC" --task "$TASKS" "${COMMON[@]}" \
    --shard "$i/$N" \
    --db "sqlite:///$here/parts/wide_$i.db" > "$here/logs/wide_$i.log" 2>&1 \
    && touch "$here/parts/wide_$i.done"
  exec 9>&-  # the lock goes with the descriptor (and with the process, however it ends)
done
