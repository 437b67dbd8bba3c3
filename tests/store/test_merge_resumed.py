"""A shard interrupted and resumed (its command run again with ``--reuse``) holds its earlier runs' results as
copies in its newest run; merged, those copies are the shard's own work again, so the page of the merged run (the
shipped reference, built in shards over many sessions) says how many models its parts trained."""

from pebench import store
from pebench.cli import main
from pebench.store.load import load

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu", "host": "h",
       "git_commit": "c0ffee"}  # fmt: skip


def _result(enc: str, length: int, **extra):
    return {"case_id": f"{enc}-k_back-L64", "encoding": enc, "task": "k_back", "train_length": 64,
            "eval_length": length, "seed": 0, "status": "ok", "score": 0.5, "metric": "accuracy",
            "higher_is_better": True, "chance_level": 0.02, "encoding_version": "1", "task_version": "1",
            "config_hash": f"h{enc}", "train_time_s": 60.0, "config": {}, **extra}  # fmt: skip


def test_the_copies_of_a_resumed_shard_count_as_its_own_work(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'part.db'}"
    engine = store.open_db(url)
    shard = {"shard": "1/2", "numprocesses": 2}
    other = store.start_run(engine, {**RUN, "options": {"shard": "2/2"}})  # another shard, in the same file
    elsewhere = store.add_result(engine, other, _result("alibi", 64))
    store.finish_run(engine, other, "finished")
    first = store.start_run(engine, {**RUN, "options": shard})  # interrupted after rope's model
    trained = store.add_result(engine, first, _result("rope", 64))
    evaluated = store.add_result(engine, first, _result("rope", 128, model_reused=True))
    store.finish_run(engine, first, "interrupted")
    cached = store.start_run(engine, {**RUN, "options": {**shard, "numprocesses": 1}})  # resumed again, -n 1
    from_cache = store.add_result(engine, cached, _result("sinusoidal", 64, model_reused=True))  # from the cache
    store.finish_run(engine, cached, "interrupted")
    last = store.start_run(engine, {**RUN, "options": shard})
    for origin, (enc, length) in [(trained, ("rope", 64)), (evaluated, ("rope", 128)),
                                  (from_cache, ("sinusoidal", 64)), (elsewhere, ("alibi", 64))]:  # fmt: skip
        store.add_result(engine, last, _result(enc, length, model_reused=True, reused_from=origin))
    store.add_result(engine, last, _result("learned", 64))  # trained after the resume
    store.finish_run(engine, last, "finished")
    engine.dispose()

    out = tmp_path / "merged.db"
    assert main(["merge", f"{url}::{last}", "-o", str(out)]) == 0
    capsys.readouterr()
    merged = load(f"sqlite:///{out}")
    flags = {(r.encoding, r.eval_length): (bool(r.model_reused), r.reused_from) for r in merged.itertuples()}
    assert flags == {("rope", 64): (False, None), ("rope", 128): (True, None),  # trained before the resume
                     ("sinusoidal", 64): (True, None),  # loaded from the cache then, still reused
                     ("alibi", 64): (True, None),  # another shard's: a copy, whose origin is not in the output
                     ("learned", 64): (False, None)}  # fmt: skip
    (fingerprint,) = merged["run_options"].iloc[0]["merged_from"]
    assert fingerprint["resumed_runs"] == [first, cached] and fingerprint["run_id"] == last


def test_a_merged_result_keeps_its_point_as_its_axes(tmp_path, capsys):
    """``pebench merge`` copies every result column (``RESULT_FIELDS``): a point's axes travel in their order."""
    url = f"sqlite:///{tmp_path / 'part.db'}"
    engine = store.open_db(url)
    run = store.start_run(engine, {**RUN, "options": {"sweep": ["lr=0.01", "layers=4"]}})
    store.add_result(engine, run, _result("rope", 64, case_id="rope-k_back-L64-lr0.01-layers4",
                                          axes=[["lr", "0.01"], ["layers", "4"]]))  # fmt: skip
    store.add_result(engine, run, _result("alibi", 64))
    store.finish_run(engine, run, "finished")
    engine.dispose()
    out = tmp_path / "merged.db"
    assert main(["merge", f"{url}::{run}", "-o", str(out)]) == 0
    capsys.readouterr()
    merged = load(f"sqlite:///{out}")
    assert {r.encoding: (r.point, r.axes) for r in merged.itertuples()} == {
        "rope": ("lr0.01-layers4", [["lr", "0.01"], ["layers", "4"]]), "alibi": ("", [])}
