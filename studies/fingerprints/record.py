"""Record every registered encoding's behavioural probe on this machine, for the cross-machine tolerance of
:mod:`pebench.engine.fingerprint` (tests/engine/test_fingerprint.py reads the records).

    python studies/fingerprints/record.py --threads 1 [--tag emulated-sse42] [--out tests/data/fingerprints]

Run it once per thread count on each CPU type a session gets (Intel Xeon, AMD EPYC). Another ISA on the same CPU is
emulated with ``ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2`` (torch's and MKL's vector kernels then
take other code paths, so their reductions round differently) and a ``--tag`` naming it.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import torch

from pebench import __version__, encodings
from pebench.engine.device import cpu_description
from pebench.engine.fingerprint import PROBE_VERSION, encoding_probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--tag", default="native", help="what is special about this record (an emulated ISA)")
    parser.add_argument("--out", type=Path, default=Path("tests/data/fingerprints"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    probes = {name: encoding_probe(name) for name in encodings.available()}
    cpu = cpu_description()
    record = {"probe_version": PROBE_VERSION, "pebench": __version__, "torch": torch.__version__, "cpu": cpu,
              "isa": torch.backends.cpu.get_cpu_capability(), "threads": args.threads, "tag": args.tag,
              "seconds": round(time.perf_counter() - start, 1), "probes": probes}  # fmt: skip
    slug = re.sub(r"[^a-z0-9]+", "-", cpu.split(",")[0].lower()).strip("-")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{slug}-{record['isa'].lower()}-{args.tag}-t{args.threads}.json"
    path.write_text(json.dumps(record, indent=0, sort_keys=True) + "\n")
    print(f"{path}: {len(probes)} encodings in {record['seconds']} s on {cpu}, {args.threads} thread(s)")


if __name__ == "__main__":
    main()
