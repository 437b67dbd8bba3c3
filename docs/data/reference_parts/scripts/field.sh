#!/bin/bash
# usage: field.sh I...  shards of the reference's fourth run: the 37 encodings that are neither core nor randomized x
# every task, 1 seed (about 2,660 models), 40 shards
for i in "$@"; do
  /work/lrdata/ref.sh field $i 40 abacus,binary,binary_norm,cable,carope,cope,coupling,decimal,decimal_norm,drope,fire,fope,fox,hope,irope,kerple,llama3,longrope,lrope,nope_qknorm,ntk,p_rope,partial_rope,path,pi,pope,rope_nope,selective,sininit,sinonly,ssmax_nope,ssmax_rope,stick_breaking,t5,tape,xpos,yarn \
    add_nocarry,addition,assoc_recall,binary_addition,binary_multiplication,bucket_sort,compute_sqrt,copy,cycle_navigation,duplicate_string,even_pairs,k_back,lm,long_range_match,mad_compression,mad_fuzzy_recall,mad_memorization,mad_noisy_recall,mad_recall,mad_selective_copy,missing_duplicate_string,modular_arithmetic,modular_arithmetic_brackets,modular_sum,mqar_forget,needle,odds_first,parity,passkey,reverse,reverse_string,shift_invariant,solve_equation,sort,stack_manipulation,template 1
done
