"""``pebench bench``: tokens/s of one training step (forward, backward, AdamW step) of the pebench model at the
default configuration, side by side with Hugging Face ``LlamaForCausalLM`` of the same sizes (same width, depth,
heads, SwiGLU hidden size, vocabulary; SDPA attention; untied embeddings). The two are timed alternately in the same
process, ``--repeats`` times, and the best repeat of each is reported, since shared machines are noisy.

``--quick-tier`` also times the core quick tier (5 encodings x 4 tasks x 3 lengths, default settings) in a
subprocess with a fresh cache and a temporary database.

``--tasks T1,T2|all`` instead times each task's quick tier on its own (the five core encodings unless
``--encodings`` says otherwise; fresh cache, temporary database), then prints its wall time and, per encoding, the
in-distribution score (at the training length) with a verdict: *learned* when the score covers at least half the
distance from chance to perfect, *partly* from a tenth, else *not learned*. For perplexity the distance is measured
in log space, from the uniform perplexity down to 1.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from pebench import encodings
from pebench.device import pick_device
from pebench.encodings.base import EncodingContext
from pebench.models import ModelConfig, Transformer


def _step_fn(model: torch.nn.Module, logits_of: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
             y: torch.Tensor) -> Callable[[], None]:  # fmt: skip
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        logits = logits_of(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def _time(step: Callable[[], None], steps: int, warmup: int, device: torch.device) -> float:
    for _ in range(warmup):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / steps


def hf_llama(cfg: ModelConfig, max_len: int) -> torch.nn.Module | None:
    """LlamaForCausalLM with the same sizes, or None when transformers is not installed."""
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        return None
    hf_cfg = LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.hidden,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_heads,
        max_position_embeddings=max_len,
        rms_norm_eps=cfg.norm_eps,
        tie_word_embeddings=False,
        attention_dropout=0.0,
    )
    hf_cfg._attn_implementation = "sdpa"
    return LlamaForCausalLM(hf_cfg)


def step_throughput(args: argparse.Namespace) -> list[dict[str, float | int | str]]:
    device = pick_device(args.device)
    cfg = ModelConfig(vocab_size=args.vocab, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads)
    rows = []
    for seq in args.seq:
        torch.manual_seed(0)
        ctx = EncodingContext(cfg.d_model, cfg.n_heads, cfg.n_layers, max(args.seq))
        ours = Transformer(cfg, encodings.build(args.encoding, ctx)).to(device).train()
        x = torch.randint(0, cfg.vocab_size, (args.batch_size, seq), device=device)
        y = torch.randint(0, cfg.vocab_size, (args.batch_size, seq), device=device)
        contenders = {f"pebench ({args.encoding})": _step_fn(ours, ours, x, y)}
        hf = hf_llama(cfg, max(args.seq))
        if hf is not None:
            hf = hf.to(device).train()
            contenders["hf LlamaForCausalLM"] = _step_fn(hf, lambda t, m=hf: m(input_ids=t).logits, x, y)
        best: dict[str, float] = {}
        for _ in range(args.repeats):
            for name, step in contenders.items():  # alternate, so drift affects both alike
                best[name] = min(best.get(name, float("inf")), _time(step, args.steps, args.warmup, device))
        for name, sec in best.items():
            rows.append({"seq": seq, "model": name, "ms_per_step": sec * 1e3,
                         "tokens_per_s": args.batch_size * seq / sec})  # fmt: skip
        if hf is None:
            print("transformers is not installed: pip install -e '.[bench]' for the Hugging Face comparison")
    return rows


CORE_ENCODINGS = ("nope", "sinusoidal", "learned", "rope", "alibi")
CORE_TASKS = ("modular_sum", "k_back", "shift_invariant", "long_range_match")


def run_suite(tasks: Sequence[str], encs: Sequence[str], tmp: str, extra: Sequence[str] = ()) -> float:
    """Run the quick tier of ``tasks`` x ``encs`` in a pytest subprocess with a fresh cache under ``tmp`` and the
    database ``tmp/bench.db``; return its wall time. Failing cases (exit status 1) are reported by pytest and counted
    in the time; any other exit status stops the benchmark."""
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "pytest", str(root / "suite"), "-q", "-p", "no:cacheprovider",
           "--db", f"sqlite:///{tmp}/bench.db", "--cache-dir", f"{tmp}/cache",
           "--encoding", ",".join(encs), "--task", ",".join(tasks), *extra]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"quick tier of {','.join(tasks)} failed with exit status {proc.returncode}")
    return elapsed


def time_quick_tier() -> float:
    """Wall time of the core quick tier (5 encodings x 4 tasks x 3 lengths) at the defaults, fresh cache, temporary
    database."""
    with tempfile.TemporaryDirectory() as tmp:
        return run_suite(CORE_TASKS, CORE_ENCODINGS, tmp)


def learned_fraction(score: float, chance: float, higher_is_better: bool) -> float:
    """How far ``score`` went from ``chance`` towards perfect: ``(s - c) / (1 - c)`` for a score in [0, 1] where
    higher is better; ``(ln c - ln s) / ln c`` for a perplexity (perfect = 1, chance = the uniform perplexity)."""
    if higher_is_better:
        return (score - chance) / (1.0 - chance) if chance < 1.0 else 0.0
    if chance <= 1.0 or score <= 0.0:
        return 0.0
    return (math.log(chance) - math.log(score)) / math.log(chance)


def verdict(fraction: float) -> str:
    """``learned`` (>= 0.5 of the way from chance to perfect), ``partly`` (>= 0.1) or ``not learned``."""
    return "learned" if fraction >= 0.5 else "partly" if fraction >= 0.1 else "not learned"


def in_distribution(df: Any, task: str) -> list[dict[str, Any]]:
    """One row per encoding of ``task`` from a results frame: its score at the training length, chance level,
    learned fraction and verdict (diverged or failed cases give ``score=None``)."""
    rows = []
    sub = df[(df.task == task) & (df.eval_length == df.train_length)]
    for enc, g in sub.groupby("encoding", sort=False):
        ok = g[g.status == "ok"]
        if ok.empty:
            rows.append({"encoding": enc, "score": None, "chance": float(g.chance_level.iloc[0]), "verdict": "failed"})
            continue
        r = ok.iloc[-1]
        frac = learned_fraction(float(r.score), float(r.chance_level), bool(r.higher_is_better))
        rows.append({"encoding": enc, "score": float(r.score), "chance": float(r.chance_level),
                     "metric": r.metric, "fraction": frac, "verdict": verdict(frac)})  # fmt: skip
    return rows


def time_tasks(tasks: Sequence[str], encs: Sequence[str], extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Each task's quick tier on its own (fresh cache, temporary database): ``{"task", "wall_s", "rows"}``."""
    from pebench.results import load

    out = []
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            wall = run_suite([task], encs, tmp, ["--benchmark-disable", *extra])  # no timing table per task
            out.append({"task": task, "wall_s": wall, "rows": in_distribution(load(f"sqlite:///{tmp}/bench.db"), task)})
        print(format_task_table(out[-1:], encs, header=len(out) == 1), flush=True)
    return out


def format_task_table(results: list[dict[str, Any]], encs: Sequence[str], header: bool = True) -> str:
    """``task  wall  metric  chance  <score per encoding>`` lines; each score is followed by ``L`` (learned),
    ``p`` (partly), ``-`` (not learned); ``n/a`` marks an encoding without a result, ``x`` a failed one."""
    mark = {"learned": "L", "partly": "p", "not learned": "-", "failed": "x"}
    lines = []
    if header:
        lines.append(f"{'task':<19}{'wall':>7}  {'metric':<12}{'chance':>8}" + "".join(f"{e:>13}" for e in encs))
    for res in results:
        by_enc = {r["encoding"]: r for r in res["rows"]}
        metric = next((r["metric"] for r in res["rows"] if "metric" in r), "?")
        chance = next((r["chance"] for r in res["rows"]), float("nan"))
        cells = []
        for e in encs:
            r = by_enc.get(e)
            if r is None:
                cells.append("n/a")
            else:
                cells.append("failed x" if r["score"] is None else f"{r['score']:.3g} {mark[r['verdict']]}")
        head = f"{res['task']:<19}{res['wall_s']:>6.0f}s  {metric:<12}{chance:>8.3g}"
        lines.append(head + "".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


def resolve_names(spec: str, kind: str) -> list[str]:
    """A comma-separated list of registered task or encoding names, or ``all``; an unknown name is a one-line
    error that lists the valid ones."""
    from pebench import encodings as enc_registry
    from pebench import tasks as task_registry
    from pebench.errors import UnknownNameError
    from pebench.registry import parse_names

    registry = task_registry if kind == "task" else enc_registry
    if spec.strip() == "all":
        return registry.available()
    names = parse_names(spec, registry.get)
    if not names:
        raise UnknownNameError(kind, spec, registry.available())
    return names


def main(args: argparse.Namespace) -> int:
    if getattr(args, "tasks", None):
        tasks = resolve_names(args.tasks, "task")
        encs = resolve_names(args.encodings or ",".join(CORE_ENCODINGS), "encoding")
        print(f"quick tier per task, encodings {','.join(encs)}; score at the training length "
              f"(L learned, p partly, - not learned)")  # fmt: skip
        results = time_tasks(tasks, encs, shlex.split(args.suite_args or ""))
        print(f"total {sum(r['wall_s'] for r in results):.0f} s")
        return 0
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {pick_device(args.device)}")
    print(f"batch {args.batch_size}, d_model {args.d_model}, layers {args.layers}, heads {args.heads}, "
          f"vocab {args.vocab}; best of {args.repeats} x {args.steps} steps")  # fmt: skip
    rows = step_throughput(args)
    print(f"{'seq':>5}  {'model':<24} {'ms/step':>9} {'tokens/s':>10}")
    for r in rows:
        print(f"{r['seq']:>5}  {r['model']:<24} {r['ms_per_step']:>9.1f} {r['tokens_per_s']:>10.0f}")
    by_seq: dict[int, dict[str, float]] = {}
    for r in rows:
        by_seq.setdefault(int(r["seq"]), {})[str(r["model"])] = float(r["tokens_per_s"])
    for seq, d in by_seq.items():
        if len(d) == 2:
            ours, theirs = d[f"pebench ({args.encoding})"], d["hf LlamaForCausalLM"]
            print(f"seq {seq}: pebench / HF throughput = {ours / theirs:.2f}x")
    if args.quick_tier:
        print(f"quick tier (pytest suite, defaults): {time_quick_tier():.0f} s")
    return 0
