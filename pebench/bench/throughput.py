"""``pebench bench``: tokens/s of one training step (forward, backward, AdamW step) of the pebench model at the
default configuration, side by side with Hugging Face ``LlamaForCausalLM`` of the same sizes (same width, depth,
heads, SwiGLU hidden size, vocabulary; SDPA attention; untied embeddings). ``--encoding`` takes one encoding, a
comma-separated list or ``all``: every contender is timed in turn in the same process, ``--repeats`` times, and the
best repeat of each is reported, since shared machines are noisy.

Each contender's work is counted too (issue 68 item 1): the FLOPs of one training step's forward and backward as
``torch.utils.flop_counter`` counts them (matrix products, convolutions and attention kernels, with the CPU's fused
attention added, :data:`CPU_ATTENTION`; elementwise arithmetic and the optimiser's step are not counted, and causal
attention counts its whole square, as the counter does), the achieved GFLOP/s (that work over the measured step
time), and that rate as a fraction of RoPE's in the same run: how close an encoding runs to what its own arithmetic
costs, where the ratio to Hugging Face's throughput is unfair to encodings that do more by design.

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
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils import flop_counter

from pebench import encodings
from pebench.encodings.base import EncodingContext
from pebench.engine.device import pick_device
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


def _cpu_attention(query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    return int(flop_counter.sdpa_flop_count(query, key, value))


def _cpu_attention_backward(grad: Any, query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None,
                            **kwargs: Any) -> int:  # fmt: skip
    return int(flop_counter.sdpa_backward_flop_count(grad, query, key, value))


CPU_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_attention_backward,
}
"""The CPU's fused attention kernels, which torch's counter does not count: the same formulas as its GPU kernels."""


def step_flops(logits_of: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> int:
    """The FLOPs of one training step's forward and backward (the loss of ``logits_of(x)`` against ``y``), as
    ``torch.utils.flop_counter`` counts them with :data:`CPU_ATTENTION` (the gradients it leaves, the timed steps'
    ``zero_grad`` clears)."""
    counter = flop_counter.FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION)
    with counter:
        logits = logits_of(x)
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).backward()
    return int(counter.get_total_flops())


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


def encoding_names(spec: str) -> list[str]:
    """``rope``, ``alibi,t5`` or ``all`` -> encoding names (an unknown name is a one-line error listing the valid)."""
    if spec == "all":
        return encodings.available()
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for name in names:
        encodings.get(name)
    return names


def _with_annotations(model: Transformer, x: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """The model's forward, given synthetic task annotations (each token's index in runs of 10, random training
    offsets from a seeded generator) when its encoding needs some: the timing of Abacus or coupling then includes
    their table lookups and offsets as a real training step does."""
    if not model.encoding.needs:
        return model
    notes = {name: (torch.arange(x.shape[1], device=x.device) % 10 + 1).expand_as(x) for name in model.encoding.needs}
    gen = torch.Generator().manual_seed(0)
    return lambda t: model(t, None, notes, gen)


def timed_encodings(spec: str) -> list[str]:
    """The encodings ``spec`` names, with RoPE added (last) when missing: the work-normalised rate is RoPE's
    fraction in the same run."""
    names = encoding_names(spec)
    return names if "rope" in names else [*names, "rope"]


def step_throughput(args: argparse.Namespace) -> list[dict[str, float | int | str]]:
    """Per sequence length and contender: ms per step, tokens/s, counted FLOPs per step and achieved GFLOP/s."""
    device = pick_device(args.device)
    layers = args.n_layers or ModelConfig.n_layers  # the default model's depth for every encoding measured
    cfg = ModelConfig(vocab_size=args.vocab, d_model=args.d_model, n_layers=layers, n_heads=args.n_heads)
    rows = []
    for seq in args.seq:
        x = torch.randint(0, cfg.vocab_size, (args.batch_size, seq), device=device)
        y = torch.randint(0, cfg.vocab_size, (args.batch_size, seq), device=device)
        contenders, work = {}, {}
        for name in timed_encodings(args.encoding):
            torch.manual_seed(0)
            ctx = EncodingContext(cfg.d_model, cfg.n_heads, cfg.n_layers, max(args.seq))
            ours = Transformer(cfg, encodings.build(name, ctx)).to(device).train()
            logits_of = _with_annotations(ours, x)
            contenders[f"pebench ({name})"] = _step_fn(ours, logits_of, x, y)
            work[f"pebench ({name})"] = step_flops(logits_of, x, y)
        hf = hf_llama(cfg, max(args.seq))
        if hf is not None:
            hf = hf.to(device).train()
            contenders["hf LlamaForCausalLM"] = _step_fn(hf, lambda t, m=hf: m(input_ids=t).logits, x, y)
            work["hf LlamaForCausalLM"] = step_flops(lambda t, m=hf: m(input_ids=t).logits, x, y)
        best: dict[str, float] = {}
        for _ in range(args.repeats):
            for name, step in contenders.items():  # alternate, so drift affects both alike
                best[name] = min(best.get(name, float("inf")), _time(step, args.timed_steps, args.warmup, device))
        for name, sec in best.items():
            tokens = args.batch_size * seq / sec
            rows.append({"seq": seq, "model": name, "ms_per_step": sec * 1e3, "tokens_per_s": tokens,
                         "gflop": work[name] / 1e9, "gflop_per_s": work[name] / 1e9 / sec})  # fmt: skip
        if hf is None:
            print("transformers is not installed: pip install -e '.[bench]' for the Hugging Face comparison")
    return rows


def ratio_lines(rows: list[dict[str, float | int | str]], names: list[str]) -> list[str]:
    """Per sequence length and encoding: its throughput over HF's (when HF ran) and its GFLOP/s and throughput as
    fractions of RoPE's in the same run."""
    by_seq: dict[int, dict[str, dict[str, float]]] = {}
    for r in rows:
        by_seq.setdefault(int(r["seq"]), {})[str(r["model"])] = {k: float(v) for k, v in r.items() if k != "model"}
    lines = []
    for seq, d in by_seq.items():
        hf, rope = d.get("hf LlamaForCausalLM"), d["pebench (rope)"]
        for name in names:
            r = d[f"pebench ({name})"]
            vs_hf = f" / HF throughput = {r['tokens_per_s'] / hf['tokens_per_s']:.2f}x;" if hf else ":"
            lines.append(f"seq {seq}: pebench ({name}){vs_hf} GFLOP/s / RoPE's = "
                         f"{r['gflop_per_s'] / rope['gflop_per_s']:.2f}x (throughput / RoPE's "
                         f"{r['tokens_per_s'] / rope['tokens_per_s']:.2f}x)")  # fmt: skip
    return lines


def main(args: argparse.Namespace) -> int:
    """Print the step throughput and work table, then :func:`ratio_lines`."""
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {pick_device(args.device)}")
    layers = args.n_layers or ModelConfig.n_layers
    print(f"batch {args.batch_size}, d_model {args.d_model}, layers {layers}, heads {args.n_heads}, "
          f"vocab {args.vocab}; best of {args.repeats} x {args.timed_steps} steps; GFLOP: a step's forward and "
          "backward as torch.utils.flop_counter counts them (products, attention; no elementwise, no AdamW)")
    rows = step_throughput(args)
    print(f"{'seq':>5}  {'model':<28} {'ms/step':>9} {'tokens/s':>10} {'GFLOP':>7} {'GFLOP/s':>8}")
    for r in rows:
        print(f"{r['seq']:>5}  {r['model']:<28} {r['ms_per_step']:>9.1f} {r['tokens_per_s']:>10.0f} "
              f"{r['gflop']:>7.2f} {r['gflop_per_s']:>8.2f}")  # fmt: skip
    print("\n".join(ratio_lines(rows, timed_encodings(args.encoding))))
    return 0
