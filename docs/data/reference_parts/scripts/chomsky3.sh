#!/bin/bash
# usage: chomsky3.sh I...  shards of the reference's third run: the randomized encodings x the six Chomsky tasks of
# the ruoss2023 finding, 3 seeds (72 models), 2 shards
for i in "$@"; do
  /work/lrdata/ref.sh chomsky3 $i 2 randomized_rope,randomized_learned \
    parity,cycle_navigation,modular_arithmetic,duplicate_string,binary_addition,bucket_sort 3
done
