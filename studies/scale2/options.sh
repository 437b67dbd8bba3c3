# The second scale's one definition of what it trains, sourced by run.sh and help.sh (the same options give the same
# model keys, hence the same checkpoints in the shared cache): twelve encodings on the nine tasks choose_tasks.py
# picked, at d_model 256, one seed, learning rate 1e-3, in N shards (COMMON: the options besides --encoding/--task).
ENC=nope,sinusoidal,learned,rope,alibi,path,selective,kerple,cope,nope_qknorm,fire,stick_breaking
TASKS=k_back,sort,even_pairs,stack_manipulation,bucket_sort,assoc_recall,mad_selective_copy,lm,template
N=8
COMMON=(--sweep d_model=256 --lr-sweep off --lr 1e-3 --reuse
        --cache-dir "${PEBENCH_SCALE2_CACHE:-$HOME/.cache/pebench-scale2}")
