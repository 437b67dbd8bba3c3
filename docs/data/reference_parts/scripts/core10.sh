#!/bin/bash
# usage: core10.sh I...  shards of the reference's first run: the core five x the ten tasks of issue 30 item 4, 3 seeds
for i in "$@"; do
  /work/lrdata/ref.sh core10 $i 6 nope,sinusoidal,learned,rope,alibi \
    passkey,needle,even_pairs,long_range_match,cycle_navigation,add_nocarry,addition,parity,shift_invariant,mad_recall 3
done
