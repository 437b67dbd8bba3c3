#!/bin/bash
# usage: restore.sh  -- on a fresh build machine (nothing under /work but the repository): rebuild the reference
# build's state from what is committed: the worktree /work/ref at a327d0d, /work/lrdata with these scripts and the
# saved (slim) parts, which --reuse resumes from. Models in flight when the machine went away are trained again
# (the checkpoint cache does not survive). Installs torch 2.13.0 (CPU) and pebench first if they are missing.
set -euo pipefail
repo=/work/main
python3 -c "import torch" 2>/dev/null || python3 -m pip install --quiet torch==2.13.0
# an editable install left by another checkout (e.g. /check/work/main) imports nothing here: reinstall unless pebench
# resolves to this repository from outside it
(cd / && python3 -c "import sqlalchemy, xdist, pebench, sys; sys.exit(not pebench.__file__.startswith('$repo/'))") \
  2>/dev/null || python3 -m pip install --quiet -e "$repo[dev]"
[ -d /work/ref ] || { git -C "$repo" worktree prune; git -C "$repo" worktree add /work/ref a327d0d; }
mkdir -p /work/lrdata/ref /work/lrdata/cache
cp -n "$repo"/docs/data/reference_parts/scripts/* /work/lrdata/
[ -e /work/lrdata/REFERENCE.md ] || cp "$repo"/docs/data/reference_parts/BUILD.md /work/lrdata/REFERENCE.md
for part in "$repo"/docs/data/reference_parts/*.db; do cp -n "$part" /work/lrdata/ref/; done
/work/lrdata/progress.sh
