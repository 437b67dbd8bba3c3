"""Published claims about continuing a trained model (issue 88: the points ``ext2x`` and ``pose2x`` of ``--extend 2``,
:mod:`pebench.engine.extension`) and about the mechanisms said to make an encoding fail (issue 89: the diagnostics,
:mod:`pebench.engine.diagnostics`).

Thresholds were fixed here before any run of these protocols was looked at (the budget study's k_back numbers
included, which no claim below reads on its own): "at least as good" allows 0.02 of the normalised score, pebench's
smallest difference it reports as a difference on one seed; "close to" allows 0.05; "degrades" is strictly lower;
the diagnostics' levels are stated with each claim. All extension claims average the normalised score over the
track's tasks (:data:`TRACK`) at F·L (2x, inside the fine-tuned window) or 2F·L (4x, beyond it).
"""

from __future__ import annotations

from pebench.analysis.findings.claims import Finding, Term, approx, diagnostic, normalised

TRACK = ("k_back", "copy", "reverse", "assoc_recall", "long_range_match", "lm", "passkey", "needle")
"""The extension track's tasks (studies/extension/track.sh): the length-dependent tasks the issue names (lm, passkey,
needle, k_back, copy, assoc_recall) and two more that read positions far apart (reverse: the whole input backwards;
long_range_match: a match across the sequence)."""
GROUP = "the extension track's tasks"
SAME = 0.02
"""Normalised score allowed below another's for "at least as good" (pebench's smallest reported difference)."""
CLOSE = 0.05
"""Normalised score within which two protocols are "close"."""


def _ext(encoding: str, *at: float, point: str = "ext2x") -> Term:
    """The mean normalised score of ``encoding`` over :data:`TRACK` at ``at`` of the extension point ``point``."""
    return normalised(encoding, TRACK, *at, group=GROUP, point=point)


PI = Finding(
    name="chen2023-pi-finetune",
    title="Position Interpolation fine-tunes to the longer window where direct fine-tuning does not",
    paper="Chen et al. 2023, Extending Context Window of Large Language Models via Positional Interpolation, "
    "arXiv:2306.15595, Sec. 3.2 and Table 4 (direct fine-tuning reached an effective window of 2,560 of 8,192 "
    "after 10,000 steps; PI extended within 1,000)",
    claim="PI fine-tuned LLaMA models to 8x their window in 1,000 steps where direct fine-tuning (RoPE unchanged at "
    "the longer length) extended slowly. Tested on the extension track (--extend 2: both continue the same RoPE model "
    "with the same fine-tune): PI's mean normalised score at 2x the training length strictly above RoPE's direct "
    "fine-tune's.",
    checks=(_ext("pi", 2) > _ext("rope", 2),),
)

YARN = Finding(
    name="peng2023-yarn-finetune",
    title="YaRN fine-tuned is at least as good as PI and NTK fine-tuned the same way",
    paper="Peng et al. 2023, YaRN: Efficient Context Window Extension of Large Language Models, arXiv:2309.00071, "
    "Sec. 4 (Table 1, Fig. 3)",
    claim="YaRN matched or beat PI and NTK-aware scaling at the same fine-tuning budget. Tested on the extension "
    "track inside the window (2x) and beyond it (4x): YaRN's mean normalised score over both at least PI's and NTK's "
    "minus 0.02.",
    checks=(_ext("yarn", 2, 4) >= _ext("pi", 2, 4) - SAME, _ext("yarn", 2, 4) >= _ext("ntk", 2, 4) - SAME),
)

CONTROLLED_INSIDE = Finding(
    name="lu2024-ntk-inside",
    title="Inside the fine-tuned window the NTK family is best",
    paper="Lu et al. 2024, A Controlled Study on Long Context Extension and Generalization in LLMs, arXiv:2409.12181, "
    "Sec. 4 (Table 2)",
    claim="With one base model, one extension data set and budget and one evaluation, the NTK-family methods "
    "(dynamic NTK, YaRN) did best inside the extended window. Tested on the extension track at 2x: NTK's and YaRN's "
    "mean normalised scores each at least PI's, LongRoPE's, Llama 3's and the direct fine-tune's minus 0.02.",
    checks=tuple(_ext(best, 2) >= _ext(other, 2) - SAME for best in ("ntk", "yarn")
                 for other in ("pi", "longrope", "llama3", "rope")),  # fmt: skip
)

CONTROLLED_BEYOND = Finding(
    name="lu2024-degrade-beyond",
    title="Beyond the fine-tuned window every extension method degrades",
    paper="Lu et al. 2024, A Controlled Study on Long Context Extension and Generalization in LLMs, arXiv:2409.12181, "
    "Sec. 4",
    claim="All methods lost accuracy past the window they were fine-tuned to. Tested on the extension track: each of "
    "rope (direct), pi, ntk, yarn, llama3 and longrope with a mean normalised score at 4x (2F·L) strictly below its "
    "score at 2x (F·L).",
    checks=tuple(_ext(e, 4) < _ext(e, 2) for e in ("rope", "pi", "ntk", "yarn", "llama3", "longrope")),
)

POSE = Finding(
    name="zhu2023-pose",
    title="PoSE inside the original window is close to a fine-tune at the full length",
    paper="Zhu et al. 2023, PoSE: Efficient Context Window Extension of LLMs via Positional Skip-wise Training, "
    "arXiv:2309.10400, Sec. 4 (Table 1)",
    claim="Fine-tuning at the original length with skipping position ids came close to fine-tuning at the target "
    "length, at a fraction of the cost. Tested on the extension track at 2x: RoPE and YaRN fine-tuned with PoSE "
    "(pose2x) each within 0.05 of the same method fine-tuned at the full length (ext2x).",
    checks=tuple(approx(_ext(e, 2, point="pose2x"), _ext(e, 2), within=CLOSE) for e in ("rope", "yarn")),
)

SCAFFOLD = Finding(
    name="seed003-scaffold",
    title="RoPE as a scaffold: dropped after 62.5% of training, the model keeps its score and extrapolates better",
    paper="seed study 003 (one of the earlier positional-encoding studies this project grew from): its scaffold runs, "
    "after DroPE (Sakana AI 2025, arXiv:2512.12167)",
    claim="The study asks whether a positional encoding is a scaffold: RoPE, YaRN and PoPE checkpoints at 10,000 of "
    "16,000 steps converted to NoPE and continued with a fresh schedule, against the same encodings trained to the "
    "end; DroPE reports that a model without its encoding after recalibration keeps its in-distribution quality and "
    "generalises to longer contexts. Tested on the extension track's tasks with RoPE (--scaffold 0.625): the "
    "scaffold's mean normalised score at the training length at least RoPE's from scratch minus 0.05, and at 4x "
    "strictly above RoPE's from scratch.",
    checks=(
        normalised("rope", TRACK, 1, group=GROUP, point="scaffold0.625")
        >= normalised("rope", TRACK, 1, group=GROUP) - CLOSE,
        normalised("rope", TRACK, 4, group=GROUP, point="scaffold0.625") > normalised("rope", TRACK, 4, group=GROUP),
    ),
)

MECHANISM_TASK = "k_back"
"""The task of the mechanism claims: the most measured in the reference, and the one the seed studies share."""

DILUTION = Finding(
    name="nakanishi2025-dilution",
    title="NoPE's attention spreads out past the training length; scalable softmax keeps it",
    paper="Nakanishi 2025, Scalable-Softmax Is Superior for Attention, arXiv:2501.19399, Sec. 2-3; Wang et al. 2024, "
    "Length Generalization of Causal Transformers without Position Encoding, arXiv:2404.12224 (attention distraction)",
    claim="Softmax attention flattens as the number of keys grows; SSMax's s·log n factor keeps it peaked. Tested on "
    "k_back with the normalised row entropy (attn_entropy, docs/diagnostics.md): NoPE's at 4x at least 0.02 above its "
    "value at the training length, SSMax-on-NoPE's at most 0.02 above its own.",
    checks=(
        diagnostic("attn_entropy", "nope", MECHANISM_TASK, 4) >= diagnostic("attn_entropy", "nope", MECHANISM_TASK, 1)
        + 0.02,
        diagnostic("attn_entropy", "ssmax_nope", MECHANISM_TASK, 4)
        <= diagnostic("attn_entropy", "ssmax_nope", MECHANISM_TASK, 1) + 0.02,
    ),
)

LOCALITY = Finding(
    name="chi2023-alibi-locality",
    title="ALiBi's attention stays within the training length; RoPE's does not",
    paper="Chi et al. 2023, Dissecting Transformer Length Extrapolation via the Lens of Receptive Field Analysis, "
    "arXiv:2212.10356",
    claim="ALiBi extrapolates because its effective receptive field stays within the training length. Tested on "
    "k_back at 4x with local_mass (the share of a row on keys nearer than the training length, over the rows that "
    "see farther keys): ALiBi's at least 0.9, RoPE's below 0.9.",
    checks=(diagnostic("local_mass", "alibi", MECHANISM_TASK, 4) >= 0.9,
            diagnostic("local_mass", "rope", MECHANISM_TASK, 4) < 0.9),  # fmt: skip
)

PROBE = Finding(
    name="kazemnejad2023-position-probe",
    title="Learned absolute positions are not decodable past the training length; NoPE's implicit positions are",
    paper="Kazemnejad et al. 2023, The Impact of Positional Encoding on Length Generalization in Transformers, "
    "arXiv:2305.19466, Sec. 5 (NoPE can represent absolute positions)",
    claim="A learned absolute table gives positions past the training length rows it never trained, while NoPE "
    "learns to represent position from the causal mask. Tested on k_back with the linear probe of absolute position "
    "on the first block's output (position_probe, R² of the probe fitted at the training length, cross-validated "
    "over sequences there): learned's R² at 2x at most 0 (no better than predicting the mean), NoPE's at the "
    "training length at least 0.5.",
    checks=(diagnostic("position_probe", "learned", MECHANISM_TASK, 2) <= 0.0,
            diagnostic("position_probe", "nope", MECHANISM_TASK, 1) >= 0.5),  # fmt: skip
)

SCORE_RANGE = Finding(
    name="chen2023-rope-score-range",
    title="RoPE's attention scores leave their trained range past the training length",
    paper="Chen et al. 2023, Extending Context Window of Large Language Models via Positional Interpolation, "
    "arXiv:2306.15595, Sec. 2.3 (the bound on attention scores at unseen positions)",
    claim="Extrapolated RoPE produces attention scores far outside the range seen in training, interpolation stays "
    "within it. Tested on k_back with logit_range_ratio (the 99th percentile of |logit| relative to the training "
    "length's): RoPE's at 4x at least 1.1.",
    checks=(diagnostic("logit_range_ratio", "rope", MECHANISM_TASK, 4) >= 1.1,),
)

SINKS = Finding(
    name="xiao2023-attention-sinks",
    title="Language models park attention on the first token",
    paper="Xiao et al. 2023, Efficient Streaming Language Models with Attention Sinks, arXiv:2309.17453, Sec. 3.1",
    claim="Trained language models put a large share of attention on the initial token whatever it holds. Tested "
    "on the lm task at the training length with sink_mass (the share of a row on token 0): RoPE's and NoPE's at "
    "least 0.1, several times the uniform share (about 2/T).",
    checks=(diagnostic("sink_mass", "rope", "lm", 1) >= 0.1, diagnostic("sink_mass", "nope", "lm", 1) >= 0.1),
)

EXTENSION_FINDINGS = (PI, YARN, CONTROLLED_INSIDE, CONTROLLED_BEYOND, POSE, SCAFFOLD)
MECHANISM_FINDINGS = (DILUTION, LOCALITY, PROBE, SCORE_RANGE, SINKS)
