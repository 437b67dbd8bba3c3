#!/bin/bash
# models done in each reference part's newest run
python3 - <<'PY'
import sqlite3, glob
tot = 0
for f in sorted(glob.glob('/work/lrdata/ref/*.db')):
    d = sqlite3.connect(f'file:{f}?mode=ro', uri=True)
    r = d.execute('select max(run_id) from results').fetchone()[0]
    n = d.execute('select count(distinct encoding||task||seed||config_hash) from results where run_id=?', (r,)).fetchone()[0]
    row = d.execute('select status from runs order by id desc limit 1').fetchone()
    st = row[0] if row else 'starting'
    tot += n
    print(f.split('/')[-1], n, st)
print('total', tot)
PY
