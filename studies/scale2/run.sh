#!/bin/bash
# The second model scale (issue 69): twelve encodings on nine tasks (choose_tasks.py) at d_model 256 (4x the
# default's matrix parameters), one seed, learning rate 1e-3, as the sweep point d_model256 (never ranked with the
# default size).
# Resumable: rerun it; --reuse and the checkpoint cache resume each shard. Each finished shard leaves parts/wide_I.done.
# Usage: bash studies/scale2/run.sh [FIRST LAST]   (shards FIRST..LAST of 8; default all)
set -u
cd "$(dirname "$0")/../.."
ENC=nope,sinusoidal,learned,rope,alibi,path,selective,kerple,cope,nope_qknorm,fire,stick_breaking
TASKS=k_back,sort,even_pairs,stack_manipulation,bucket_sort,assoc_recall,mad_selective_copy,lm,template
N=8
mkdir -p studies/scale2/parts studies/scale2/logs
for i in $(seq "${1:-1}" "${2:-$N}"); do
  [ -f "studies/scale2/parts/wide_$i.done" ] && continue
  OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding "$ENC" --task "$TASKS" \
    --sweep d_model=256 --lr-sweep off --lr 1e-3 --shard "$i/$N" --reuse \
    --cache-dir "${PEBENCH_SCALE2_CACHE:-$HOME/.cache/pebench-scale2}" \
    --db "sqlite:///studies/scale2/parts/wide_$i.db" > "studies/scale2/logs/wide_$i.log" 2>&1 \
    && touch "studies/scale2/parts/wide_$i.done"
done
