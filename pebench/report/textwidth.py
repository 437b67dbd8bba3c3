"""Text widths for the SVG charts, measured rather than guessed: the advance widths of DejaVu Sans and DejaVu Sans
Bold (the first font the charts ask for; its glyphs are wider than Helvetica's and Arial's, the fallbacks, so a width
measured here is enough for them too), in font units of 1/2048 em, for printable ASCII. Any other character counts
as a full em, the widest glyph of the font, so an unusual name is given room rather than clipped.

The tables were read from the fonts matplotlib ships (``matplotlib.ft2font.FT2Font(...).load_char(c,
flags=LoadFlags.NO_SCALE).horiAdvance``); they are copied here so rendering needs no font file and every machine
lays a page out the same way.
"""

from __future__ import annotations

UNITS_PER_EM = 2048
REGULAR = (
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690, 1303, 1303, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577,
    1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401,
    2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569,
    569, 1186, 569, 1995, 1298, 1253, 1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,
    1303, 1716,
)  # fmt: skip
"""DejaVu Sans advance widths of the characters 32 (space) to 126 (``~``)."""
BOLD = (
    713, 934, 1067, 1716, 1425, 2052, 1786, 627, 936, 936, 1071, 1716, 778, 850, 778, 748, 1425, 1425, 1425,
    1425, 1425, 1425, 1425, 1425, 1425, 1425, 819, 819, 1716, 1716, 1716, 1188, 2048, 1585, 1561, 1503, 1700,
    1399, 1399, 1681, 1714, 762, 762, 1587, 1305, 2038, 1714, 1741, 1501, 1741, 1577, 1475, 1397, 1663, 1585,
    2259, 1579, 1483, 1485, 936, 748, 936, 1716, 1024, 1024, 1382, 1466, 1214, 1466, 1389, 891, 1466, 1458, 702,
    702, 1362, 702, 2134, 1458, 1407, 1466, 1466, 1010, 1219, 979, 1458, 1335, 1892, 1321, 1335, 1192, 1458,
    748, 1458, 1716,
)  # fmt: skip
"""DejaVu Sans Bold advance widths of the characters 32 to 126."""
OTHER = {"–": 1024, "×": 1716, "±": 1716, "·": 700, "≥": 1716, "≤": 1716}
"""A few non-ASCII characters the charts write themselves (the larger of the two weights)."""


def text_width(text: str, size: float = 11.0, bold: bool = False) -> float:
    """The width in px of ``text`` set in DejaVu Sans (Bold for ``bold``, as for font-weight 600) at ``size`` px."""
    table = BOLD if bold else REGULAR
    units = 0
    for ch in text:
        code = ord(ch)
        units += table[code - 32] if 32 <= code <= 126 else OTHER.get(ch, UNITS_PER_EM)
    return units * size / UNITS_PER_EM
