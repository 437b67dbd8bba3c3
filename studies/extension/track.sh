#!/usr/bin/env bash
# The extension track of the shipped reference (issue 88): the RoPE family continued from RoPE's model (rope direct,
# pi, ntk, yarn, llama3, longrope), PoSE on rope and yarn, and four controls (alibi, nope, path, fire), fine-tuned at
# 2x the training length, on 8 tasks where length matters, 3 seeds, one learning rate (--lr-sweep off: 3e-3, the
# rate most reference cells chose); and seed study 003's scaffold runs (RoPE converted to NoPE at 62.5% of its
# budget) on the same tasks, in a database of their own (bash studies/extension/track.sh scaffold). Run per task, so each task's base models (RoPE's and the controls') are trained
# once and shared by its methods; each task is its own database, resumable (the checkpoint cache and --reuse keep
# what is done), merged at the end with pebench merge.
#
#   bash studies/extension/track.sh TASK [TASK ...]      # e.g. k_back copy; all 8 without arguments
#   bash studies/extension/track.sh scaffold [I/N]       # the scaffold runs on all 8 tasks (shard I of N)
#
# Estimate (docs/extension.md): per seed, 5 base models over the 8 tasks (49 CPU-min each, from the reference's
# training times) and 12 fine-tunes at a quarter of the budget (10 at 2L, about 2.1x a step at L; 2 PoSE at L).
set -euo pipefail
cd "$(dirname "$0")/../.."
tasks=("$@")
all=(k_back copy reverse assoc_recall long_range_match lm passkey needle)
[ ${#tasks[@]} -gt 0 ] || tasks=("${all[@]}")
cache="${PEBENCH_TRACK_CACHE:-.pebench_cache/extension}"
if [ "${tasks[0]}" = scaffold ]; then  # track.sh scaffold [I/N]: one shard of them, into a database of its own
  shard="${tasks[1]:-1/1}"
  python -m pebench run --encoding rope --task "$(IFS=,; echo "${all[*]}")" --scaffold 0.625 --seeds 3 \
    --lr-sweep off --shard "$shard" --db "sqlite:///studies/extension/track_scaffold_${shard%%/*}.db" \
    --cache-dir "$cache" --reuse -q
  exit
fi
for task in "${tasks[@]}"; do
  db="sqlite:///studies/extension/track_${task}.db"
  python -m pebench run --encoding rope,pi,ntk,yarn,llama3,longrope,alibi,nope,path,fire --task "$task" \
    --extend 2 --seeds 3 --lr-sweep off --db "$db" --cache-dir "$cache" --reuse -q
  python -m pebench run --encoding rope,yarn --task "$task" --extend 2 --pose --seeds 3 --lr-sweep off \
    --db "$db" --cache-dir "$cache" --reuse -q
done
