"""The case id's one format and its parser (:class:`pebench.case.Case`): ids with and without the seed round-trip."""

import pytest

from pebench.case import Case

CASES = [
    Case("rope", "k_back", 64),
    Case("lrope", "s_task", 12, 3),
    Case("rope_nope", "modular_arithmetic_brackets", 128, 10),
    Case("alibi", "l2_task", 7, 0),
    Case("sininit", "lm", 256, 1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.test_id(seeded=True))
def test_ids_round_trip_with_and_without_the_seed(case):
    assert Case.parse(case.test_id(seeded=True)) == (case, True)
    assert Case.parse(case.test_id(seeded=False)) == (Case(case.encoding, case.task, case.length), False)
    assert case.test_id(seeded=False) == case.id == f"{case.encoding}-{case.task}-L{case.length}"
    assert case.test_id(seeded=True) == f"{case.id}-s{case.seed}" == Case.with_seed(case.id, case.seed)
    assert case.model_id(seeded=True) == f"{case.encoding}-{case.task}-s{case.seed}"


@pytest.mark.parametrize("text", ["rope", "rope-k_back", "rope-k_back-L", "rope-k_back-Lx", "rope-k_back-L64-s",
                                  "task parity"])  # fmt: skip
def test_what_is_no_case_id_is_refused(text):
    with pytest.raises(ValueError, match="not a case id"):
        Case.parse(text)
