#!/bin/bash
# Added seeds 1 and 2 (issue 65 item 2) -- resumable: rerun this script; --reuse + the cache resume each shard.
cd /work/seeds/ref
ENC=selective,kerple,cope,nope_qknorm,fire,stick_breaking,llama3,yarn,carope,cable,randomized_rope,randomized_learned
TASKS_A=mqar_forget,shift_invariant,even_pairs,parity,modular_sum,sort,long_range_match
TASKS_B=cycle_navigation,addition,mad_noisy_recall,bucket_sort
shard() {  # shard NAME I N TASKS; a shard another runner holds (its lock) is left to it
  [ -f /work/seeds/parts/$1_$2.done ] && return
  exec 9>/work/seeds/parts/$1_$2.lock
  flock -n 9 || { exec 9>&-; return; }
  OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding "$ENC" --task "$4" --seeds 3 -k "not s0] and not randomized_rope-parity and not randomized_learned-parity and not randomized_rope-cycle_navigation and not randomized_learned-cycle_navigation and not randomized_rope-bucket_sort and not randomized_learned-bucket_sort" \
    --shard "$2/$3" --cache-dir /work/seeds/cache --reuse --db "sqlite:////work/seeds/parts/$1_$2.db" \
    > /work/seeds/logs/$1_$2.log 2>&1 && touch /work/seeds/parts/$1_$2.done
  exec 9>&-  # the lock goes with the descriptor (and with the process, however it ends)
}

for i in 12 11 10 9 8 7 6 5 4 3 2 1; do shard seedsB $i 12 $TASKS_B; done
