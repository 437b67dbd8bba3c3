"""The report's charts without a browser: length plots as one small chart per encoding family with hover titles and
legend rows the page's script can find, and the attention maps' hover data."""

import re

import numpy as np
import pytest

from pebench import store
from pebench.report import attn, build_context, synthetic


@pytest.fixture
def small_run(tmp_path):
    spec = synthetic.SynthSpec(["rope", "alibi", "nope", "yarn", "retired_x"], [synthetic.SynthTask("k_back")],
                               seeds=2, heads=2, attention_tokens=8)  # fmt: skip
    url = f"sqlite:///{tmp_path / 's.db'}"
    engine = store.open_db(url)
    synthetic.write_run(engine, synthetic.records(spec))
    engine.dispose()
    return build_context(url, "latest")


def test_length_plots_are_small_multiples_by_family(small_run):
    view = small_run["tasks"][0]
    html = str(view.plot_svg)
    panels = re.findall(r'<div class="panel" data-family="([a-z]+)"><svg.*?</svg></div>', html)
    assert panels == ["rotary", "bias", "none", "other"]  # in family order; an unregistered name is "other"
    rotary = re.search(r'data-family="rotary">(<svg.*?</svg>)', html).group(1)
    assert re.findall(r'<g class="s" data-enc="([a-z_]+)"', rotary) == ["rope", "yarn"]
    assert re.findall(r'<g class="lg" data-enc="([a-z_]+)"', rotary) == ["rope", "yarn"]
    # a line's values on hover: one title per line, its value at every length
    assert re.search(r"<title>rope: [0-9.]+%( ± [0-9.]+)? at length 64, [0-9.]+%( ± [0-9.]+)? at 128, ", rotary)
    assert "rotary: q and k rotated by position" in rotary
    colors = small_run["colors"]
    assert len(set(colors.values())) == 5 and colors["rope"] != colors["yarn"]


def test_attention_maps_carry_their_probabilities(small_run):
    view = small_run["tasks"][0]
    maps = {a["encoding"]: a for a in view.attention}
    assert set(maps) == {"rope", "alibi", "nope", "yarn", "retired_x"}
    rope = maps["rope"]
    assert rope["tokens"] == 8 and rope["token_ids"] == "0 1 2 3 4 5 6 7"
    assert [im["label"] for im in rope["images"]] == ["head 0", "head 1", "mean"]
    assert rope["images"][-1]["p"] == ""  # the page's script averages the heads for the mean
    assert all(im["src"].startswith("data:image/png;base64,") for im in rope["images"])
    assert "attention probability p" in str(small_run["attention_scale_svg"])


def test_packed_probabilities_round_trip_to_two_significant_digits():
    rng = np.random.default_rng(0)
    m = np.tril(rng.dirichlet(np.ones(12), size=12))
    m[0] = 0
    m[0, 0] = 1.0
    back = attn.unpacked(attn.packed(m), 12)
    assert np.allclose(np.triu(back, 1), 0)
    tri = np.tril_indices(12)
    # b = round(255 sqrt(p)): |p - p'| <= sqrt(p)/255 + 1/(4 * 255^2)
    assert np.all(np.abs(back[tri] - m[tri]) <= np.sqrt(m[tri]) / 255 + 1 / (4 * 255**2) + 1e-12)
    assert len(attn.packed(m)) == 4 * ((12 * 13 // 2 + 2) // 3)  # one byte per probability, base64


def test_learning_curves_show_validation_at_1x_and_2x_beside_the_training_loss(small_run):
    """The curves section: the training loss chart, then the validation metric at the training length and at 2x,
    one line per encoding in each (the synthetic curves carry validation points, as training stores them)."""
    loss, val = str(small_run["curves_svg"]), str(small_run["validation_svg"])
    assert "k_back" in loss and len(re.findall(r'<g class="s" data-enc=', loss)) == 5
    titles = re.findall(r'font-weight="600">([^<]*)</text>', val)
    assert titles == ["k_back: accuracy at 1\u00d7 (64)", "k_back: accuracy at 2\u00d7 (128)"]
    assert len(re.findall(r'<g class="s" data-enc=', val)) == 2 * 5
    assert "validation metric" in val


def test_no_validation_chart_without_validation_points(tmp_path):
    """Curves stored without validation values (val_batches 0, or an older database) give no validation chart."""
    spec = synthetic.SynthSpec(["rope"], [synthetic.SynthTask("k_back")], seeds=1, heads=2, attention_tokens=8)
    recs = synthetic.records(spec)
    for rec in recs:
        rec["curve"] = [{k: v for k, v in p.items() if not k.startswith("val_")} for p in rec["curve"]]
    url = f"sqlite:///{tmp_path / 'n.db'}"
    engine = store.open_db(url)
    synthetic.write_run(engine, recs)
    engine.dispose()
    context = build_context(url, "latest")
    assert str(context["validation_svg"]) == "" and "k_back" in str(context["curves_svg"])


def test_learning_curves_draw_the_leaders_and_any_asked_for(tmp_path):
    """Ten encodings: the curves draw the leaderboard's first 8 and say which are left out; ``--curves`` adds some,
    ``all`` draws every one, and a name not on the page is refused in one line (issue 65)."""
    from pebench.report import ReportError

    names = ["rope", "alibi", "nope", "yarn", "t5", "fire", "kerple", "xpos", "learned", "sinusoidal"]
    spec = synthetic.SynthSpec(names, [synthetic.SynthTask("k_back")], curve_points=3, attention=False)
    url = f"sqlite:///{tmp_path / 'ten.db'}"
    engine = store.open_db(url)
    synthetic.write_run(engine, synthetic.records(spec))
    engine.dispose()

    def drawn(ctx):
        return set(re.findall(r'<g class="s" data-enc="([a-z_0-9]+)"', str(ctx["curves_svg"])))

    ctx = build_context(url, "latest")
    order = [e.encoding for e in ctx["entries"]]
    assert drawn(ctx) == set(order[:8]) and ctx["curves_note"]["left_out"] == sorted(order[8:])
    ctx = build_context(url, "latest", curves=order[-1])
    assert drawn(ctx) == set(order[:8]) | {order[-1]} and ctx["curves_note"]["asked"] == [order[-1]]
    assert drawn(build_context(url, "latest", curves="all")) == set(names)
    with pytest.raises(ReportError, match="--curves nonesuch: not an encoding of this page"):
        build_context(url, "latest", curves="nonesuch")
