"""Behavioural fingerprints (pebench.engine.fingerprint): the tolerance is justified by recorded probes of other CPU
kernels and thread counts, a rewrite that computes the same keeps every probe, one constant or one generator changed
stales exactly its cells, and a plugin's encoding is probed like a built-in one."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from pebench import encodings, tasks
from pebench.engine import fingerprint as fp
from pebench.engine import shipped
from pebench.engine.code import stale_cells
from tests.plugin_files import my_pe

RECORDS = Path(__file__).parents[1] / "data" / "fingerprints"


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Each test computes its fingerprints anew (the process and the disk cache keep them once computed): these tests
    change code in memory, which the disk cache's key (the source files) cannot see, nor the shipped rows' key."""
    monkeypatch.setattr(fp, "_PROBES", {})
    monkeypatch.setattr(fp, "_TASKS", {})
    monkeypatch.setenv(fp.CACHE_ENV, "off")
    monkeypatch.setattr(shipped, "table", lambda path=None: {})  # nor the shipped rows, whose key is the source too


def test_recorded_probes_of_other_kernels_and_threads_lie_far_inside_the_tolerance():
    records = [json.loads(p.read_text()) for p in sorted(RECORDS.glob("*.json"))]
    records = [r for r in records if r["probe_version"] == fp.PROBE_VERSION]
    assert {r["threads"] for r in records} >= {1, 2} and len({(r["cpu"], r["isa"]) for r in records}) >= 2
    # each pair of records compared on the encodings both hold: a newer encoding (or one whose probe changed, a
    # record's "left_out" says) may lack records of a CPU type yet
    pairs = [(a, b, e) for a, b in itertools.combinations(records, 2) for e in set(a["probes"]) & set(b["probes"])]
    assert len({e for _, _, e in pairs}) >= 40
    assert len({e for a, b, e in pairs if a["cpu"].split(",")[0] != b["cpu"].split(",")[0]}) >= 40  # CPU types
    worst = max(fp.probe_deviation(a["probes"][e], b["probes"][e]) for a, b, e in pairs)
    assert worst < 1e-2  # the spread is under 1% of the tolerance (measured: 1.7e-4 of it, RTOL 1e-9)


def test_the_probe_is_deterministic_and_one_constant_moves_it_far_beyond_the_tolerance():
    a, b = fp.encoding_probe("rope"), fp.encoding_probe("rope")
    assert a == b and fp.probe_deviation(a, b) == 0.0
    moved = fp.probe_deviation(a, fp.encoding_probe("rope", {"base": 10001.0}))
    assert moved > 100  # RoPE's base 10000 -> 10001 moves the probe ~2.9e-6, ~3000x the tolerance


@pytest.mark.slow
def test_a_rewrite_of_the_model_that_computes_the_same_keeps_every_probe(monkeypatch):
    from pebench.models import transformer

    names = ["rope", "alibi", "path", "nope_qknorm"]
    before = {n: fp.encoding_probe(n) for n in names}

    def forward(self, x):  # the same RMSNorm written otherwise: a division by the root instead of rsqrt
        scale = (x.float().square().sum(-1, keepdim=True) / x.shape[-1] + self.eps).sqrt()
        return self.weight * (x.float() / scale).to(x.dtype)

    monkeypatch.setattr(transformer.RMSNorm, "forward", forward)
    after = {n: fp.encoding_probe(n) for n in names}
    assert all(after[n] != before[n] for n in names)  # the bits moved ...
    assert all(fp.same_probe(before[n], after[n]) for n in names)  # ... the computation did not


def _cells(pairs: list[tuple[str, str]]) -> tuple[pd.DataFrame, dict[str, dict]]:
    """A results frame of one result per (encoding, task) stamped with this pebench's fingerprints, and the
    stored fingerprint rows."""
    rows, stored = [], {}
    for i, (enc, task) in enumerate(pairs):
        e, t = fp.encoding_fingerprint(enc), fp.task_fingerprint(tasks.build(task))
        stored |= {e["digest"]: e, t["digest"]: t}
        rows.append({"id": i, "run_id": 1, "encoding": enc, "task": task, "code_version": "old",
                     "encoding_fingerprint": e["digest"], "task_fingerprint": t["digest"]})  # fmt: skip
    return pd.DataFrame(rows), stored


PAIRS = [("rope", "k_back"), ("rope", "copy"), ("alibi", "k_back"), ("alibi", "copy")]


def test_current_cells_are_current_whatever_their_source_hash():
    df, stored = _cells(PAIRS)
    assert stale_cells(df, stored) == []
    without = df.assign(encoding_fingerprint="", task_fingerprint="")  # no fingerprints: judged by the source hash
    assert len(stale_cells(without, stored)) == 4 and "no fingerprint recorded" in stale_cells(without, stored)[0]


def test_one_constant_of_one_encoding_stales_exactly_its_cells(monkeypatch):
    from pebench.encodings import rope

    df, stored = _cells(PAIRS)
    fp._PROBES.clear()
    original = rope.rope_inv_freq
    monkeypatch.setattr(rope, "rope_inv_freq", lambda dim, base: original(dim, base + 1.0))
    lines = stale_cells(df, stored)
    assert sorted(line.split(":")[0] for line in lines) == ["rope on copy", "rope on k_back"]
    assert "computes otherwise" in lines[0] and "task" not in lines[0].split(":")[1]


def test_a_change_to_one_task_generator_stales_exactly_its_cells(monkeypatch):
    df, stored = _cells(PAIRS)
    fp._TASKS.clear()
    cls = type(tasks.build("copy"))
    original = cls.sample

    def sample(self, batch_size, length, generator, split="train"):
        batch = original(self, batch_size, length, generator, split)
        batch.inputs[:, -1] = 0  # one token of every sequence
        return batch

    monkeypatch.setattr(cls, "sample", sample)
    lines = stale_cells(df, stored)
    assert sorted(line.split(":")[0] for line in lines) == ["alibi on copy", "rope on copy"]
    assert all("task data changed" in line and "encoding" not in line.split(":")[1] for line in lines)


def test_a_plugin_encoding_is_probed_like_a_built_in_one(isolated, tmp_path):
    from pebench import plugins

    plugins.load(str(my_pe(tmp_path)))
    first = fp.encoding_fingerprint("my_pe", {"slope": 0.5})
    assert "dtype" not in first["values"] and first["name"] == "my_pe"
    df, stored = _cells([("my_pe", "k_back")])
    assert stale_cells(df, stored) == []
    other = fp.encoding_probe("my_pe", {"slope": 0.6})
    assert not fp.same_probe(first["values"], other)


def test_the_task_digest_is_exact_and_covers_every_length_and_split():
    k_back = tasks.build("k_back")
    assert fp.task_digest(k_back) == fp.task_digest(tasks.build("k_back"))
    assert fp.task_digest(k_back) != fp.task_digest(tasks.build("copy"))
    torch.manual_seed(0)  # the digest draws from its own generators only
    assert fp.task_digest(k_back) == fp.task_digest(tasks.build("k_back"))


def test_the_disk_cache_keeps_a_fingerprint_for_the_same_source_and_machine(tmp_path, monkeypatch):
    monkeypatch.setenv(fp.CACHE_ENV, str(tmp_path / "fp.json"))
    first = fp.encoding_fingerprint("alibi")
    monkeypatch.setattr(fp, "_PROBES", {})
    monkeypatch.setattr(fp, "encoding_probe", lambda *a, **k: pytest.fail("computed again"))
    assert fp.encoding_fingerprint("alibi") == first  # from the file: the same source, torch and CPU
    key = fp._cache_key("encoding", encodings.get("alibi"), "x")
    fp.package_source.cache_clear()
    monkeypatch.setattr(fp, "__file__", str(tmp_path / "elsewhere" / "engine" / "fingerprint.py"))
    (tmp_path / "elsewhere" / "engine").mkdir(parents=True)
    (tmp_path / "elsewhere" / "engine" / "fingerprint.py").write_text("# other source\n")
    assert fp._cache_key("encoding", encodings.get("alibi"), "x") != key  # other source: another key
    fp.package_source.cache_clear()
