#!/bin/bash
# usage: core_rest.sh I...  shards of the reference's second run: the core five x the other 26 tasks, 3 seeds
for i in "$@"; do
  /work/lrdata/ref.sh core26 $i 12 nope,sinusoidal,learned,rope,alibi \
    assoc_recall,binary_addition,binary_multiplication,bucket_sort,compute_sqrt,copy,duplicate_string,k_back,lm,mad_compression,mad_fuzzy_recall,mad_memorization,mad_noisy_recall,mad_selective_copy,missing_duplicate_string,modular_arithmetic,modular_arithmetic_brackets,modular_sum,mqar_forget,odds_first,reverse,reverse_string,solve_equation,sort,stack_manipulation,template 3
done
