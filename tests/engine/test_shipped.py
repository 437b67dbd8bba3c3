"""Reading never trains (issue 86, item 4): pebench ships the probes and task digests of its own encodings and tasks
(``pebench/data/fingerprints.json``), keyed by the source they were computed from. What ships is current for this
source and is what this code computes; reading the shipped reference on a cold machine computes no fingerprint; an
edited source or a plugin computes its own."""

from __future__ import annotations

import pytest
from study_scripts import load

from pebench import encodings, tasks
from pebench.analysis.currency import stale_lines
from pebench.engine import fingerprint as fp
from pebench.engine import shipped
from pebench.store.database import open_readonly
from pebench.store.load import load_light
from tests.plugin_files import my_pe

ship = load("studies/fingerprints/ship.py")
REFERENCE = f"sqlite:///{shipped.PACKAGE / 'data' / 'reference.db'}"


@pytest.fixture
def cold(monkeypatch, tmp_path):
    """A machine that has computed no fingerprint: an empty disk cache, none kept in the process."""
    monkeypatch.setattr(fp, "_PROBES", {})
    monkeypatch.setattr(fp, "_TASKS", {})
    monkeypatch.setenv(fp.CACHE_ENV, str(tmp_path / "fingerprints.json"))


def test_every_wanted_row_ships_from_this_source():
    rows = ship.wanted(REFERENCE)
    assert len(rows) >= len(encodings.available()) + len(tasks.available())
    assert ship.stale(rows) == [], "the shipped fingerprints are stale: run python studies/fingerprints/ship.py"


def test_reading_the_shipped_reference_on_a_cold_machine_computes_nothing(cold, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a fingerprint was computed while reading")

    monkeypatch.setattr(fp, "encoding_probe", refuse)
    monkeypatch.setattr(fp, "task_digest", refuse)
    engine = open_readonly(REFERENCE)
    try:
        assert stale_lines(engine, load_light(engine)) == []
    finally:
        engine.dispose()


def test_an_edited_source_or_a_plugin_is_not_taken_from_the_shipped_rows(cold, monkeypatch, isolated, tmp_path):
    rope = encodings.get("rope")
    config = f"rope:{fp.canonical_json({'base': 10000.0})}"
    assert shipped.lookup("encoding", rope, config, fp.PROBE_VERSION) is not None
    assert shipped.lookup("encoding", rope, config, "another probe version") is None
    monkeypatch.setattr(shipped, "source_digest", lambda cls, refs=(): "an edited checkout")
    assert shipped.lookup("encoding", rope, config, fp.PROBE_VERSION) is None
    from pebench import plugins

    plugins.load(str(my_pe(tmp_path)))
    assert not shipped.own(encodings.get("my_pe"))


@pytest.mark.slow
def test_every_shipped_row_is_what_this_code_computes(cold, monkeypatch):
    table = shipped.table()
    monkeypatch.setattr(shipped, "table", lambda path=None: {})  # computed here, never taken from the file
    assert len(table) >= len(encodings.available()) + len(tasks.available())
    for entry in table.values():
        row = entry["row"]
        if entry["kind"] == "encoding":
            now = fp.encoding_fingerprint(row["name"], row["options"])
            assert fp.same_probe(row["values"], now["values"]), (row["name"], row["options"])
        else:
            assert fp.task_fingerprint(tasks.build(row["name"], row["options"]))["digest"] == row["digest"], row


def test_the_source_digest_reads_code_not_documentation(tmp_path):
    source = shipped.PACKAGE / "encodings" / "rope.py"
    original, path = source.read_text(), tmp_path / "rope.py"
    edited = original.replace('"""Rotary position embedding', '"""Rotary position embedding, edited', 1)
    edited = edited.replace("def rope_inv_freq(", "# a comment above\ndef rope_inv_freq(", 1)
    path.write_text(edited)
    assert edited != original and shipped.code_text(path) == shipped.code_text(source)
    changed = tmp_path / "changed.py"
    changed.write_text(original.replace('Option(10000.0, "frequency base"', 'Option(10001.0, "frequency base"'))
    assert shipped.code_text(changed) != shipped.code_text(path)
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")  # does not parse: its raw bytes
    assert shipped.code_text(broken) == b"def (:\n"
