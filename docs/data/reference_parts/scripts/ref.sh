#!/bin/bash
# usage: ref.sh NAME I N ENCODINGS TASKS SEEDS -- shard I/N of one reference run (issue 29), from the fixed worktree
# /work/ref, into /work/lrdata/ref/NAME_I.db; rerun the same line to resume (--reuse copies what is done, the
# checkpoint cache keeps trained models). Merge the parts of one NAME with pebench merge.
name=$1; i=$2; n=$3; encs=$4; tasks=$5; seeds=$6
cd /work/ref
echo "== $name $i/$n $(date +%T)"
OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding "$encs" --task "$tasks" --seeds "$seeds" \
  --shard "$i/$n" --cache-dir /work/lrdata/cache --reuse --db "sqlite:////work/lrdata/ref/${name}_$i.db" 2>&1 | tail -n 3
echo "== $name $i/$n done $(date +%T)"
