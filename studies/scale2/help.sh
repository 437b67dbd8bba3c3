#!/bin/bash
# The second scale (issue 69): a second core's help with one shard another runner holds, for the end of the run, when
# one runner has finished and the other still has models of its last shard to train.
# It trains that shard's models last-first, one (encoding, task) at a time, into the shared checkpoint cache only (its
# results go to a throwaway database); the runner that holds the shard then loads each such model from the cache
# (the checkpoint lock makes the one that comes second wait and load) and records it in its part. It stops when the
# shard's .done appears or it reaches the runner's position (every model left is then in the cache).
# Usage: REF=/path/to/worktree bash studies/scale2/help.sh I      (I: the held shard, 1..8)
# options.sh gives it run.sh's options (same model keys, so the same checkpoints); the throwaway database is $TMPDIR's.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
: "${REF:?set REF to the worktree run.sh uses}"
i=${1:?which shard (1..8)}
cd "$REF"
# shellcheck source=options.sh
. "$here/options.sh"
tmp=${TMPDIR:-/tmp}/scale2_help_$i.db
# the shard's (encoding, task) pairs in the order its runner takes them (test ids end [encoding-task-...])
mapfile -t pairs < <(OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --collect-only \
  --encoding "$ENC" --task "$TASKS" "${COMMON[@]}" --shard "$i/$N" --db "sqlite:///$tmp" 2>/dev/null \
  | sed -n 's/.*\[\([a-z0-9_]*\)-\([a-z0-9_]*\)-.*/\1 \2/p' | uniq)
echo "shard $i: ${#pairs[@]} (encoding, task) pairs; helping from the last"
for ((k = ${#pairs[@]} - 1; k >= 0; k--)); do
  [ -f "$here/parts/wide_$i.done" ] && { echo "shard $i done"; break; }
  read -r enc task <<< "${pairs[$k]}"
  # the runner has recorded this pair already: every later pair is in the cache, nothing is left to help with
  n=$(sqlite3 "$here/parts/wide_$i.db" "select count(*) from results where encoding='$enc' and task='$task'")
  [ "$n" != "0" ] && { echo "the runner has reached $enc $task: stopping"; break; }
  echo "$(date +%H:%M) $enc $task"
  OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding "$enc" --task "$task" "${COMMON[@]}" \
    --db "sqlite:///$tmp" > "${TMPDIR:-/tmp}/scale2_help_${i}_${enc}_${task}.log" 2>&1
done
