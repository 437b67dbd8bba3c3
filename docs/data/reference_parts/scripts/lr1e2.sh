#!/bin/bash
# Issue 30: 1e-2 seeds 1-2 on long_range_match (seed 0 is in a.db, the legacy 3-rate grid), with the 1e-3/3e-3
# models of seeds 1-2 loaded from the checkpoint cache that core10 fills (same code: run after core10's
# long_range_match cells are done). Then: pebench bench --lr-verdicts a.db,b.db,... (see REFERENCE.md).
cd /work/ref
OMP_NUM_THREADS=1 python3 -m pytest suite -p no:cacheprovider -q --encoding nope,sinusoidal,learned,rope,alibi \
  --task long_range_match --seeds 3 --lr-sweep 1e-3,3e-3,1e-2 --cache-dir /work/lrdata/cache --reuse \
  --db sqlite:////work/lrdata/a.db 2>&1 | tail -n 3
