#!/bin/bash
# usage: after.sh PID CMD...  -- wait until process PID has ended, then run CMD (chains the reference's lines of
# work in one session without a gap; nothing survives a session's end, rerun the lines then)
pid=$1; shift
while kill -0 "$pid" 2>/dev/null; do sleep 30; done
echo "== after $pid: $* $(date +%T)"
"$@"
