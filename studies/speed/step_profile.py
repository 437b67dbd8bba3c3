"""Where a training step's time goes for the encodings below 0.7 of RoPE's GFLOP/s (issue 68 item 3).

    python studies/speed/step_profile.py [--encoding cope,stick_breaking,path,rope] [--seq 256] [--batch 64]

One forward+backward+AdamW step of the default model (d_model 128, 2 layers, 4 heads, vocab 64) under
torch.profiler after 2 warm-up steps; per encoding the step time and the ops with the most self CPU time, and the
share of the step in matrix products (mm/bmm/addmm/baddbmm/SDPA) against everything else (elementwise, gathers,
reductions, copies): the part a fused kernel could save.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from pebench import encodings
from pebench.encodings.base import EncodingContext
from pebench.models import ModelConfig, Transformer

PRODUCTS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::linear", "aten::matmul",
            "aten::_scaled_dot_product_flash_attention_for_cpu",
            "aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--encoding", default="cope,stick_breaking,path,rope")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--top", type=int, default=8)
    args = p.parse_args()
    cfg = ModelConfig(vocab_size=64)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; seq {args.seq}, batch {args.batch}")
    for name in args.encoding.split(","):
        torch.manual_seed(0)
        model = Transformer(cfg, encodings.build(name, EncodingContext(cfg.d_model, cfg.n_heads, cfg.n_layers,
                                                                       args.seq))).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randint(0, 64, (args.batch, args.seq))

        def step(model: Transformer = model, opt: torch.optim.Optimizer = opt, x: torch.Tensor = x) -> None:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        step(), step()
        start = time.perf_counter()
        step()
        plain = time.perf_counter() - start
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        products = sum(e.self_cpu_time_total for e in events if e.key in PRODUCTS)
        print(f"\n{name}: {plain * 1e3:.0f} ms a step (unprofiled); matrix products {products / total:.0%} of self "
              f"CPU time, the rest {1 - products / total:.0%}")
        for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[: args.top]:
            print(f"  {e.key:<58} {e.self_cpu_time_total / 1e3:8.1f} ms  {e.self_cpu_time_total / total:5.1%}  "
                  f"x{e.count}")


if __name__ == "__main__":
    main()
