"""Encoding colours and families in the report: every colour readable on the white page (WCAG contrast >= 3:1), one
colour per encoding, the members of a family different hues, and measured text widths."""

import pytest

from pebench import encodings
from pebench.report import colors, families
from pebench.report.textwidth import text_width


def test_contrast_ratio():
    assert colors.contrast("#000000") == pytest.approx(21.0)
    assert colors.contrast("#ffffff") == pytest.approx(1.0)
    assert colors.contrast("#767676") == pytest.approx(4.54, abs=0.01)  # the usual AA grey


@pytest.mark.parametrize("color", colors.PALETTE)
def test_every_palette_colour_has_contrast_against_white(color):
    assert colors.contrast(color) >= colors.MIN_CONTRAST


def test_no_pale_yellow_and_one_colour_per_encoding():
    names = families.ordered(encodings.available())
    assigned = colors.encoding_colors(names)
    assert len(set(assigned.values())) == len(names) == len(encodings.available())
    assert "#bcbd22" not in assigned.values() and "#17becf" not in assigned.values()  # tab10's pale olive and cyan
    for _, members in families.grouped(names):  # the lines of one small chart: any 8 of them different hues
        hues = [colors.PALETTE.index(assigned[n]) % 8 for n in members]
        assert all(len(set(hues[i : i + 8])) == len(hues[i : i + 8]) for i in range(len(hues)))
    assert len(set(colors.PALETTE)) == len(colors.PALETTE) >= len(names)
    many = colors.encoding_colors([f"enc{i:02d}" for i in range(48)])  # beyond the palette: darkened hues
    assert len(set(many.values())) == 48 and min(colors.contrast(c) for c in many.values()) >= colors.MIN_CONTRAST


def test_families_order_and_unknown_names():
    assert families.family_of("rope") == "rotary" and families.family_of("randomized_learned") == "wrapper"
    assert families.family_of("retired_encoding") == families.OTHER
    assert families.ordered(["zeta", "rope", "alibi", "learned", "nope"]) == ["learned", "rope", "alibi", "nope",
                                                                               "zeta"]  # fmt: skip
    assert [f for f, _ in families.grouped(encodings.available())] == [
        "absolute", "rotary", "bias", "content", "none", "wrapper"]  # fmt: skip


def test_text_width_is_measured_per_glyph():
    assert text_width("iiii") < text_width("mmmm")  # not a width per character
    assert text_width("randomized_learned", 11, bold=True) == pytest.approx(125.82, abs=0.01)
    assert text_width("randomized_learned", 11, bold=True) > text_width("randomized_learned", 11)
    assert text_width("λ") == pytest.approx(11.0)  # any other character: a full em


def test_an_encoding_keeps_its_colour_from_page_to_page():
    everything = colors.encoding_colors(families.ordered(encodings.available()))
    for page in (["rope", "alibi"], ["alibi", "path", "learned"], ["rope", "my_pe", "nope"]):
        shown = colors.encoding_colors(families.ordered(page))
        assert all(shown[n] == everything[n] for n in page if n in everything), page
    mine = [colors.encoding_colors(families.ordered(p))["my_pe"] for p in (["my_pe"], ["rope", "my_pe", "path"])]
    assert mine[0] == mine[1] and mine[0] not in everything.values()  # a plugin's: stable, no built-in's colour
