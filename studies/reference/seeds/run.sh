#!/bin/bash
# Added seeds 1 and 2 (issue 65 item 2) -- resumable: rerun this script; --reuse + the cache resume each shard.
# REF: a worktree at commit 82ba707 (`git worktree add $REF 82ba707`: every part of one run from one commit);
# PARTS: the part databases (the finished ones are copied here, studies/reference/seeds/); CACHE: a checkpoint cache;
# LOGS: one log per shard. A part is finished when PARTS/NAME_I.done exists.
: "${REF:?}" "${PARTS:?}" "${CACHE:?}" "${LOGS:?}"
cd "$REF"
ENC=selective,kerple,cope,nope_qknorm,fire,stick_breaking,llama3,yarn,carope,cable,randomized_rope,randomized_learned
TASKS_A=mqar_forget,shift_invariant,even_pairs,parity,modular_sum,sort,long_range_match
TASKS_B=cycle_navigation,addition,mad_noisy_recall,bucket_sort
shard() {  # shard NAME I N TASKS; a shard another runner holds (its lock) is left to it
  [ -f "$PARTS"/$1_$2.done ] && return
  exec 9>"$PARTS"/$1_$2.lock
  flock -n 9 || { exec 9>&-; return; }
  OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding "$ENC" --task "$4" --seeds 3 -k "not s0] and not randomized_rope-parity and not randomized_learned-parity and not randomized_rope-cycle_navigation and not randomized_learned-cycle_navigation and not randomized_rope-bucket_sort and not randomized_learned-bucket_sort" \
    --shard "$2/$3" --cache-dir "$CACHE" --reuse --db "sqlite:///$PARTS/$1_$2.db" \
    > "$LOGS"/$1_$2.log 2>&1 && touch "$PARTS"/$1_$2.done
  exec 9>&-  # the lock goes with the descriptor (and with the process, however it ends)
}
for i in 1 2 3 4 5 6 7 8; do shard seedsA $i 8 $TASKS_A; done
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do shard seedsB $i 12 $TASKS_B; done
