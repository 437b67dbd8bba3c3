"""Whether a change keeps what the runs compute bit for bit: every registered encoding's probe in float32 (the
runs' own precision) by the code of this checkout, written to a JSON file, to compare with the same file written by
another commit's code (run from a worktree of it, with this checkout's pebench/engine/fingerprint.py copied in).

    git worktree add /tmp/before COMMIT && cp pebench/engine/fingerprint.py /tmp/before/pebench/engine/
    PYTHONPATH=/tmp/before python studies/fingerprints/fp32_identity.py --out before.json
    python studies/fingerprints/fp32_identity.py --out after.json --compare before.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

import pebench
from pebench import encodings
from pebench.engine.fingerprint import encoding_probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="a file written by other code: list what differs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    probes = {name: encoding_probe(name, dtype=torch.float32) for name in encodings.available()}
    args.out.write_text(json.dumps({"pebench": str(Path(pebench.__file__).parent), "probes": probes}) + "\n")
    if args.compare is not None:
        other = json.loads(args.compare.read_text())["probes"]
        same = [n for n in probes if other.get(n) == probes[n]]
        print(f"{len(same)} of {len(probes)} encodings bit-identical in float32; differ: "
              f"{', '.join(n for n in probes if n not in same) or 'none'}")  # fmt: skip


if __name__ == "__main__":
    main()
