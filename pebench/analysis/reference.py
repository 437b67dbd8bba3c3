"""Your row beside the field (``--with-reference``, issue 29 item 6): a run's results joined with reference results
for every encoding the run did not train, only where the two are comparable.

Two results are comparable when their configurations agree on everything but the encoding: the task (name,
version, options), the training (steps, batch, learning rate, stop rule, precision ...), the evaluation and the model
sizes, the depth counted as *the encoding's default* when it is (NoPE's default 6 blocks and RoPE's 2 are both "the
default"; a run with ``--layers 4`` is only comparable with reference results at 4). :func:`comparable_key` is that
identity. The reference rows joined are the latest result of each case of the reference database, only for the
tasks and evaluated lengths the run has, and only where some result of the run on the same task has the same key;
every reference (encoding, task) that is left out is listed with why (``task k_back: version 1 here, 2 in the
run``, ``configuration differs: train.steps 200 vs 400``). When nothing at all is comparable (a reference of other
task versions, or trained at other settings), the page is refused in one line naming the first reasons and the fix
(:func:`nothing_comparable_text`).

Results of the two learning-rate protocols (:mod:`pebench.analysis.lr`) are never joined: a run at each cell's best
rate is put beside reference cells of the same rates, each at its own chosen rate (the learning rate itself is then
left out of the key, the grid being the same), and a run at one rate beside one-rate reference results only; the
reference cells of the other protocol are listed with why (:func:`protocol_split`).

A reference result that is not what the installed pebench computes (its encoding's behavioural probe or its task's
data moved since, :func:`pebench.engine.code.staleness`; a refactor that computes the same keeps it) is still the
same configuration, but not the same experiment: it is refused in one line naming the cells and the fix (rebuild
them, or ``--allow-stale`` to show them, counted as stale on the page). :func:`check_fresh` refuses a reference
database with such cells before a run trains anything (issue 33 item 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from pebench import encodings
from pebench.analysis import lr
from pebench.analysis.currency import stale_lines
from pebench.engine.code import cells_of, stale_cells
from pebench.engine.currency import RunSettings
from pebench.errors import PebenchError
from pebench.hashing import config_hash
from pebench.models import ModelConfig
from pebench.store.database import REFERENCE_FILE, REFERENCE_NAME, open_readonly, safe_url
from pebench.store.load import attach_json, curve_points, load_light, runs

DEFAULT_DEPTH = "default"


def reference_url(given: str | None) -> str:
    """The database of reference results: ``given`` (a URL), else (or ``reference``) the shipped
    :data:`REFERENCE_FILE`; a one-line error when neither is there."""
    if given and given != REFERENCE_NAME:
        return given
    if not REFERENCE_FILE.is_file():
        raise PebenchError(f"no reference results ship with this pebench ({REFERENCE_FILE.name} is not in "
                           f"{REFERENCE_FILE.parent}); give --with-reference URL, a database with reference runs")
    return f"sqlite:///{REFERENCE_FILE}"


def _default_layers(encoding: str) -> int:
    try:
        own = encodings.get(encoding).default_layers
    except KeyError:  # an encoding this pebench does not know (a plugin not loaded): the global default
        own = None
    return own if own is not None else ModelConfig.n_layers


def comparable_part(config: Mapping[str, Any], encoding: str, chosen_rate: bool = False) -> dict[str, Any]:
    """``config`` without the encoding, and with the model's depth written ``default`` when it is the encoding's
    default depth (see the module docstring); with ``chosen_rate`` (a learning-rate sweep's cell at its chosen
    rate) without the learning rate."""
    part = {k: v for k, v in config.items() if k not in ("encoding", "max_len")}
    model = dict(part.get("model") or {})
    if model.get("n_layers") == _default_layers(encoding):
        model["n_layers"] = DEFAULT_DEPTH
    part["model"] = model
    if chosen_rate and isinstance(part.get("train"), Mapping):
        part["train"] = {k: v for k, v in part["train"].items() if k != "lr"}
    return part


def comparable_key(config: Mapping[str, Any], encoding: str, chosen_rate: bool = False) -> str:
    """The hash of :func:`comparable_part`: equal for two results that differ only in their encoding."""
    return config_hash(comparable_part(config, encoding, chosen_rate))


def protocol_split(reference: pd.DataFrame, protocols: Mapping[int, str | None], rates: str | None
                   ) -> tuple[pd.DataFrame, list[str]]:  # fmt: skip
    """The rows of ``reference`` whose run (``run_id`` -> its learning-rate protocol, :func:`pebench.analysis.lr.
    protocol`) has the protocol ``rates`` of the run shown, and one line per (encoding, task) that has results of
    the other protocol only (a cell that also has results at ``rates`` is not left out)."""
    # a list, not Series.map: pandas would turn the one-rate protocol's None into NaN beside a grid's text
    theirs = pd.Series([protocols.get(int(r)) for r in reference["run_id"]], index=reference.index, dtype=object)
    same = theirs.map(lambda p: p == rates).astype(bool)
    present = set(zip(reference["encoding"][same], reference["task"][same], strict=True))
    left = ~same & pd.Series([c not in present for c in zip(reference["encoding"], reference["task"], strict=True)],
                             index=reference.index, dtype=bool)  # fmt: skip

    def text(p: str | None) -> str:
        return "one learning rate" if p is None else f"the best of the learning rates {p} per cell"

    out = [f"{e} on {t}: protocol differs ({text(p)} in the reference, {text(rates)} here)"
           for (e, t), p in sorted({(e, t): p for e, t, p in zip(reference["encoding"][left], reference["task"][left],
                                                                   theirs[left], strict=True)}.items())]  # fmt: skip
    return reference[same], out


def _difference(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> str:
    """The first setting in which the flat views of ``a`` and ``b`` differ: ``train.steps 200 vs 400``."""
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            return _difference(x, y, f"{prefix}{key}.")
        return f"{prefix}{key} {x!r} vs {y!r}"
    return "nothing"


@dataclass
class Joined:
    """The reference rows joined with a run, and what was left out."""

    rows: pd.DataFrame
    encodings: list[str] = field(default_factory=list)
    not_comparable: list[str] = field(default_factory=list)
    """One line per reference (encoding, task) left out, with why."""
    stale: int = 0
    """Joined rows that are not what the installed pebench computes (:func:`pebench.engine.code.stale_cells`)."""
    stale_cells: list[str] = field(default_factory=list)
    """The (encoding, task) cells of those rows: ``rope on k_back``."""


def join(run: pd.DataFrame, reference: pd.DataFrame, chosen_rate: bool = False,
         stored: Mapping[str, Mapping[str, Any]] | None = None,
         settings: Mapping[int, RunSettings | str] | None = None) -> Joined:
    """The rows of ``reference`` (latest result per case, with ``config``) to show beside ``run`` (with
    ``config``): encodings ``run`` does not have, on its tasks and evaluated lengths, with a :func:`comparable_key`
    that some result of ``run`` on the same task has (see the module docstring). With ``chosen_rate`` both are a
    learning-rate sweep's cells at their chosen rates, compared without the rate. ``stored``: the reference's
    fingerprints (:func:`pebench.store.fingerprints.load_fingerprints`) and ``settings`` its runs' settings
    (:func:`pebench.analysis.currency.run_settings_of`), by which its stale rows are found."""
    if run.empty or reference.empty:
        return Joined(reference.iloc[0:0])
    mine = set(run["encoding"])
    ref = reference[~reference["encoding"].isin(mine)]
    ref = ref.sort_values("id").drop_duplicates(["encoding", "task", "train_length", "eval_length", "seed",
                                                  "case_id"], keep="last")  # fmt: skip
    cr = chosen_rate
    keys = {(t, comparable_key(c, e, cr)) for t, c, e in zip(run["task"], run["config"], run["encoding"], strict=True)}
    example = {t: comparable_part(c, e, cr) for t, c, e in zip(run["task"], run["config"], run["encoding"],
                                                                strict=True)}  # fmt: skip
    lengths = run.groupby("task")["eval_length"].agg(set).to_dict()
    keep, out = [], []
    for (enc, task), g in ref.groupby(["encoding", "task"], sort=True):
        if task not in example:
            continue  # a task the run did not train: nothing to put the reference beside
        # row by row: a cell may hold results at several configurations (another model size, issue 69), and only
        # those comparable with the run are joined; a cell with none is listed with why
        same = [(task, comparable_key(c, enc, cr)) in keys for c in g["config"]]
        if not any(same):
            first = g.iloc[0]
            mine_task = (example[task].get("task") or {})
            theirs = (first["config"].get("task") or {})
            if mine_task.get("version") != theirs.get("version"):
                why = f"task {task}: version {theirs.get('version')} in the reference, {mine_task.get('version')} here"
            else:
                why = f"configuration differs: {_difference(comparable_part(first['config'], enc, cr), example[task])}"
            out.append(f"{enc} on {task}: {why}")
            continue
        g = g[same]
        keep.append(g[g["eval_length"].isin(lengths[task])])
    rows = pd.concat(keep) if keep else ref.iloc[0:0]
    lines = stale_cells(rows, stored, settings) if "code_version" in rows else []
    cells = cells_of(lines)
    old = pd.Series([f"{e} on {t}" in cells for e, t in zip(rows["encoding"], rows["task"], strict=True)],
                    index=rows.index, dtype=bool)  # fmt: skip
    return Joined(rows, sorted(set(rows["encoding"])), out, int(old.sum()), cells)


FIX = ("rebuild them (pebench results --stale --db URL lists the cells; pebench rebuild --db URL retrains them) "
       "or give --allow-stale to show them counted as stale")


def _listed(cells: list[str], most: int = 3) -> str:
    return ", ".join(cells[:most]) + (f" and {len(cells) - most} more" if len(cells) > most else "")


def stale_text(joined: Joined) -> str:
    """The one line refusing stale joined rows (:attr:`Joined.stale`)."""
    return (f"{joined.stale} reference result(s) in {len(joined.stale_cells)} cell(s) ({_listed(joined.stale_cells)}) "
            f"are not what this pebench computes; {FIX}")


def nothing_comparable_text(joined: Joined) -> str:
    """The one line refusing a reference of which nothing is comparable with the run (another task version, another
    step budget ...: :attr:`Joined.not_comparable`)."""
    n = len(joined.not_comparable)
    return (f"none of its results is comparable with this run ({'; '.join(joined.not_comparable[:2])}"
            f"{f' and {n - 2} more' if n > 2 else ''}); train the run at the reference's settings, or give a "
            f"reference built at this pebench's task versions and the run's settings")


def open_reference(url: str, check: bool = True) -> Engine:
    """The reference database at ``url`` opened for reading only (:func:`pebench.store.database.open_readonly`: the
    shipped file from a read-only install too); its refusals named as the reference's, not as ``--db``."""
    try:
        return open_readonly(url, check)
    except PebenchError as err:
        raise PebenchError(f"--with-reference {safe_url(url)}: {str(err).split(': ', 1)[-1]}") from None


def check_joinable(url: str, run: pd.DataFrame, rates: str | None, where: str = "") -> None:
    """Refuse in one line, before training, a reference at ``url`` of which nothing can be joined with a run that
    will store ``run`` (``encoding``, ``task``, ``eval_length``, ``config`` rows) at the learning-rate protocol
    ``rates``: the page would refuse it after training (:func:`nothing_comparable_text`). The join is the page's
    (:mod:`pebench.report.data`): the reference runs of the same protocol, each cell at its chosen rate for a
    sweep, then :func:`join`; ``where`` names the sweep point in the message."""
    engine = open_reference(url)
    try:
        ref = load_light(engine)
        protocols = {int(r["id"]): lr.protocol(r["options"]) for r in runs(engine)}
        ref, other_protocol = protocol_split(ref, protocols, rates)
        ref = ref[ref["task"].isin(set(run["task"]))]  # the join reads no other task's rows
        ref = attach_json(engine, ref) if not ref.empty else ref.assign(config=[], metrics=[])
        if rates is not None and not ref.empty:
            ref = ref.sort_values("id").drop_duplicates(["case_id", "seed"], keep="last")
            ref = lr.chosen(ref, lr.final_validation(curve_points(engine, ref["id"])))
    finally:
        engine.dispose()
    joined = join(run, ref, chosen_rate=rates is not None)
    mine = set(run["encoding"])
    joined.not_comparable += [line for line in other_protocol if line.split(" on ", 1)[0] not in mine]
    if joined.rows.empty and joined.not_comparable:
        raise PebenchError(f"--with-reference {safe_url(url)}{where}: {nothing_comparable_text(joined)}")


def check_fresh(url: str) -> None:
    """Refuse the reference database at ``url`` in one line when any of its cells is not what this pebench computes
    (:func:`pebench.engine.code.stale_cells`): its results are not this pebench's experiment."""
    engine = open_reference(url)
    try:
        lines = stale_lines(engine, load_light(engine))
    finally:
        engine.dispose()
    if lines:
        cells = cells_of(lines)
        raise PebenchError(f"--with-reference {safe_url(url)}: {len(cells)} cell(s) ({_listed(cells)}) are not what "
                           f"this pebench computes; {FIX}")


def stale_in(engine: Engine, run: int | str | None = None) -> tuple[list[str], int]:
    """The stale cells of a database (of run ``run``, else of all runs) as :func:`pebench.engine.code.stale_cells`'s
    lines, and the number of (encoding, task) cells looked at."""
    from pebench.store.lifecycle import resolve_run_id

    df = load_light(engine)
    if run is not None:
        df = df[df["run_id"] == resolve_run_id(engine, run)]
    cells = df.groupby(["encoding", "task"]).ngroups if not df.empty else 0
    return stale_lines(engine, df), cells
