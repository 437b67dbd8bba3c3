#!/bin/bash
# usage: fieldr.sh I...  shards of the reference's fifth run: the randomized encodings x the 30 tasks chomsky3 leaves
# out, 1 seed (120 models), 4 shards
for i in "$@"; do
  /work/lrdata/ref.sh fieldr $i 4 randomized_rope,randomized_learned \
    add_nocarry,addition,assoc_recall,binary_multiplication,compute_sqrt,copy,even_pairs,k_back,lm,long_range_match,mad_compression,mad_fuzzy_recall,mad_memorization,mad_noisy_recall,mad_recall,mad_selective_copy,missing_duplicate_string,modular_arithmetic_brackets,modular_sum,mqar_forget,needle,odds_first,passkey,reverse,reverse_string,shift_invariant,solve_equation,sort,stack_manipulation,template 1
done
