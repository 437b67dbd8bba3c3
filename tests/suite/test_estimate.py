"""The estimate before any training (issue 71 item 5): the models a run trains, what the cache already holds, and
the time from timed training steps, factorised over encodings and tasks; ``--collect-only`` says it and trains
nothing."""

from __future__ import annotations

import pytest

from pebench.suite import estimate


def test_durations_read_as_minutes_and_hours():
    assert [estimate.duration(s) for s in (5, 75, 3599, 5400, 5160)] == ["1 min", "1 min", "1 h 00 min", "1 h 30 min",
                                                                          "1 h 26 min"]  # fmt: skip


def test_the_rates_of_every_pair_come_from_e_plus_t_timings(monkeypatch):
    """A machine where a pair's rate is an encoding's factor times a task's: the factorisation recovers every pair
    exactly from E + T - 1 timed pairs; a pair whose encoding shares no task with the anchor encoding is timed."""
    enc = {"rope": 1.0, "alibi": 0.8, "path": 0.25, "abacus": 0.9}
    task = {"k_back": 100.0, "copy": 40.0, "lm": 10.0, "addition": 30.0}
    pairs = {(e, t): (e, t) for e in ("rope", "alibi", "path") for t in ("k_back", "copy", "lm")}
    pairs[("abacus", "addition")] = ("abacus", "addition")  # applies only where rope is not selected
    timed = []

    def fake_rate(case):
        timed.append(case)
        return enc[case[0]] * task[case[1]]

    rates, n = estimate.pair_rates(pairs, fake_rate)  # type: ignore[arg-type]
    assert rates == pytest.approx({p: enc[p[0]] * task[p[1]] for p in pairs})
    assert n == len(timed) == 3 + 2 + 1  # rope on 3 tasks, alibi and path on their anchor, abacus itself


def test_workers_of_the_n_option():
    assert [estimate.workers_of(v) for v in (None, 0, 2, "3")] == [1, 1, 2, 3]
    assert estimate.workers_of("auto") >= 1


def test_collect_only_says_the_models_and_time_and_trains_nothing(run_suite, tiny, tmp_path):
    db = tmp_path / "r.db"
    common = ("--encoding", "rope,alibi", "--task", "k_back", *tiny, "--steps", "3", "--cache-dir", str(tmp_path / "c"))
    proc = run_suite("--collect-only", *common, "--db", f"sqlite:///{db}")
    assert proc.returncode == 0, proc.output
    line = next(x for x in proc.stdout.splitlines() if x.startswith("pebench: "))
    assert line.startswith("pebench: 2 models to train, about ") and "with 1 worker on this machine" in line, line
    assert not db.exists() and not (tmp_path / "c").exists()
    assert run_suite(*common, "--db", f"sqlite:///{db}").returncode == 0  # trains them into the cache
    again = run_suite("--collect-only", *common, "--db", f"sqlite:///{db}")
    assert "pebench: nothing to train: all 2 models load from the cache" in again.stdout, again.output


def test_a_pair_timed_once_is_remembered_on_this_machine(monkeypatch, tmp_path):
    """The second estimate of the same cases times nothing: every pair's rate comes from the first's, kept beside
    the fingerprints; another configuration is timed anew, and with that cache off every estimate times."""
    from pebench.case import Case
    from pebench.engine import fingerprint
    from pebench.engine.runner import Runner
    from pebench.engine.settings import Settings

    monkeypatch.setenv(fingerprint.CACHE_ENV, str(tmp_path / "fp.json"))
    tiny = dict(d_model=16, n_layers=1, n_heads=2, batch_size=8, steps=3, device="cpu", progress=False)
    cases = [Case(e, "k_back", 64) for e in ("rope", "alibi")]
    first = estimate.estimate(Runner(Settings(**tiny)), cases)
    assert (first.calibrated, first.remembered) == (2, 0)
    assert (tmp_path / "step_rates.json").is_file()
    second = estimate.estimate(Runner(Settings(**tiny)), cases)
    assert (second.calibrated, second.remembered) == (0, 2)
    assert second.seconds == pytest.approx(first.seconds)
    assert "2 pairs timed by an earlier run here" in second.line() and "timed in" not in second.line()
    wider = estimate.estimate(Runner(Settings(**(tiny | {"d_model": 32}))), cases)
    assert (wider.calibrated, wider.remembered) == (2, 0)
    monkeypatch.setenv(fingerprint.CACHE_ENV, "off")
    assert estimate.estimate(Runner(Settings(**tiny)), cases).calibrated == 2
