"""The suite's baseline (``pytest suite --baseline``): each case is checked as it finishes against the baseline run's
result for the same seed and configuration (paired: on CPU an unchanged model gives the identical number) and fails
when it is worse by more than the tolerance -- and, when the baseline has several seeds, also worse than the worst
baseline seed (outside the seeds' noise). Run-to-run verdicts are :mod:`pebench.analysis.compare`'s."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pebench import metrics
from pebench.analysis.compare import CompareError, config_difference, est_dict, threshold
from pebench.analysis.stats import estimate
from pebench.metrics import Tolerances
from pebench.records.record import ResultRecord
from pebench.status import ResultStatus
from pebench.store.load import load

if TYPE_CHECKING:
    import pandas as pd


class Baseline:
    """A baseline run's ok results, for checking each suite case as it finishes (``pytest suite --baseline``)."""

    def __init__(self, run_id: int, frame: pd.DataFrame, tol: Tolerances) -> None:
        self.run_id = run_id
        self.tol = tol
        self.frame = frame
        self.keys = set(zip(frame["encoding"], frame["task"], frame["eval_length"], strict=True))
        self.config_hashes = set(frame["config_hash"])

    @classmethod
    def load(cls, url: str, run_id: int, tol: Tolerances) -> Baseline:
        return cls(run_id, load(url, run_id), tol)

    def check_compatible(self, configs: dict[tuple[str, str], tuple[str, dict[str, Any]]]) -> None:
        """``configs``: (encoding, task) -> (config hash, config) of the selected cases. Raises CompareError when
        the baseline has no case in common or none of the same config."""
        models = {(e, t) for e, t, _ in self.keys}
        common = sorted(models & set(configs))
        if not common:
            raise CompareError(f"baseline run {self.run_id} has no case in common with the selected encodings/tasks")
        if not any(configs[m][0] in self.config_hashes for m in common):
            enc, task = common[0]
            rows = self.frame[(self.frame["encoding"] == enc) & (self.frame["task"] == task)]
            diff = config_difference(rows.iloc[0]["config"], configs[(enc, task)][1])
            raise CompareError(
                f"baseline run {self.run_id} is from an incompatible config (e.g. {enc}-{task}: "
                f"{'; '.join(diff[:3]) or 'config hash differs'}); bless a new baseline or pick another run"
            )

    def check(self, record: ResultRecord) -> Regression | None:
        """The :class:`Regression` when ``record`` got worse than the baseline beyond the tolerance, else None."""
        f = self.frame
        same = (f["encoding"] == record.encoding) & (f["task"] == record.task)
        same &= (f["eval_length"] == record.eval_length) & (f["config_hash"] == record.config_hash)
        rows = f[same]
        values = rows[rows["status"] == ResultStatus.OK]
        values = values[values["score"].notna()]
        if values.empty or record.status != ResultStatus.OK or record.score is None:
            return None
        same_seed = values[values["seed"] == record.seed]
        ref = float(same_seed["score"].iloc[-1]) if not same_seed.empty else float(values["score"].mean())
        metric = metrics.of_result(record.metric, record.higher_is_better)
        x = float(record.score)
        limit = threshold(metric, ref, self.tol)
        drop = -metric.gain(ref, x)
        if drop <= limit:
            return None
        all_scores = values["score"].astype(float)
        worst = float(all_scores.min() if metric.higher_is_better else all_scores.max())
        if len(all_scores) > 1 and metric.gain(worst, x) >= 0:
            return None  # within the spread of the baseline's seeds
        spread = estimate(all_scores.tolist()) if len(all_scores) > 1 else None
        return Regression(
            case_id=record.case_id, seed=record.seed, run_id=self.run_id, metric=record.metric, value=x,
            reference=ref, same_seed=not same_seed.empty, drop=drop, tolerance=self.tol.describe(metric),
            baseline=est_dict(spread), worst=worst if spread is not None else None,
        )  # fmt: skip


@dataclass(frozen=True)
class Regression:
    """A suite case that regressed against the baseline run: the numbers, and :attr:`message` for people."""

    case_id: str
    seed: int
    run_id: int
    metric: str
    value: float
    reference: float
    same_seed: bool
    """Whether ``reference`` is the baseline's result of the same seed (else the mean of its other seeds)."""
    drop: float
    tolerance: str
    baseline: dict[str, Any] | None = None
    """Mean and interval over the baseline's seeds (with several seeds)."""
    worst: float | None = None

    @property
    def message(self) -> str:
        seed_note = f"seed {self.seed}" if self.same_seed else "baseline mean of other seeds"
        spread = ""
        if self.baseline is not None:
            b = self.baseline
            spread = (
                f"; baseline over {b['n']} seeds: mean {b['mean']:.4f} [{b['low']:.4f}, {b['high']:.4f}], "
                f"worst {self.worst:.4f}"
            )
        return (
            f"{self.case_id} (seed {self.seed}) regressed against baseline run {self.run_id}: {self.metric} "
            f"{self.value:.4f} vs {self.reference:.4f} ({seed_note}), worse by {self.drop:.4f} > tolerance "
            f"{self.tolerance}{spread}"
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Regression:
        return cls(**json.loads(text))
