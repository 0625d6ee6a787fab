"""The one adaptive driver: caps, preferences, and the analyses that use it."""

import pytest

from symattn.adaptive import (DEEPEN, GROW_BANK, NEW_POINT, Growth, Step, adapt, doubled, grown_bank,
                              schwartz_zippel_bound)
from symattn.errors import ResourceLimitError, SymattnError
from symattn.model import Architecture


def test_grown_bank_is_half_again_rounded_up():
    assert [grown_bank(n) for n in range(1, 8)] == [2, 3, 5, 6, 8, 9, 11]


def test_preferences_fall_through_to_the_first_request_the_caps_allow():
    growth = Growth(max_bank=4, max_truncation=64)
    # the bank cannot grow past 4: the second preference is taken
    assert growth.next_step(Step(4, 8), GROW_BANK, ()) is None
    adapted = adapt(lambda step: step.truncation >= 32, Step(4, 8),
                    lambda done, step, history: [] if done else [GROW_BANK, DEEPEN], growth)
    assert [s.truncation for s in adapted.steps] == [8, 16, 32]
    assert adapted.requests == ((DEEPEN,), (DEEPEN,))
    assert adapted.concluded


def test_a_tuple_request_applies_the_parts_the_caps_allow():
    growth = Growth(max_bank=100, max_truncation=None, deepen=lambda n: n + 1)
    assert growth.next_step(Step(3, 5, 0), (NEW_POINT, GROW_BANK, DEEPEN), ()) == Step(5, 5, 1)
    assert Growth().next_step(Step(3, 5, 0), (GROW_BANK, DEEPEN), ()) is None


def test_caps_on_runs_and_on_each_kind_of_growth():
    never = lambda outcome, step, history: [GROW_BANK, DEEPEN]  # noqa: E731
    runs = adapt(lambda step: None, Step(2, 2), never, Growth(max_bank=10**6, max_truncation=10**6, max_runs=4))
    assert runs.runs == 4 and not runs.concluded
    kinds = adapt(lambda step: None, Step(2, 2), never,
                  Growth(max_bank=10**6, max_truncation=10**6, max_bank_growths=2, max_deepenings=1))
    assert kinds.step == Step(5, 4) and kinds.runs == 4 and not kinds.concluded


def test_deepen_after_bank_freezes_the_bank_once_deepened():
    # ask for a bigger bank after every run; deepen only after the second run
    def decide(outcome, step, history):
        return [GROW_BANK, DEEPEN] if len(history) == 2 else [GROW_BANK] if len(history) < 4 else []

    frozen = adapt(lambda step: None, Step(2, 4), decide,
                   Growth(max_bank=100, max_truncation=100, max_bank_growths=1, deepen_after_bank=True))
    assert [(s.bank, s.truncation) for s in frozen.steps] == [(2, 4), (3, 4), (3, 8)]
    assert not frozen.concluded


def test_before_step_sees_each_step_and_may_refuse_it():
    seen = []

    def before_step(step, previous):
        seen.append((step.truncation, previous and previous.truncation))
        if step.truncation > 8:
            raise ResourceLimitError(f"eps^{step.truncation} would not fit")

    with pytest.raises(ResourceLimitError, match="eps\\^16"):
        adapt(lambda step: None, Step(1, 4), lambda *_: [DEEPEN], Growth(max_truncation=64), before_step)
    assert seen == [(4, None), (8, 4), (16, 8)]


def test_unknown_request_is_named():
    with pytest.raises(SymattnError, match="'shrink'"):
        adapt(lambda step: None, Step(1, 1), lambda *_: ["shrink"], Growth(max_bank=4))


def test_describe_and_bound():
    adapted = adapt(lambda step: None, Step(3, 4), lambda o, s, h: [] if len(h) == 3 else [(NEW_POINT, DEEPEN)],
                    Growth(max_truncation=100, deepen=doubled))
    assert adapted.describe() == "truncation eps^4 -> eps^16, 3 random points (3 runs)"
    single = adapt(lambda step: None, Step(3, 4), lambda *_: [], Growth())
    assert single.describe() == "no growth (1 run)"
    assert schwartz_zippel_bound(10, [20, 40]) == pytest.approx(0.125)
    assert schwartz_zippel_bound(0, [7]) == 0.0


def test_spectrum_grows_a_bank_that_is_too_small():
    from symattn.spectrum import decay_spectrum

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    result = decay_spectrum(arch, bank=1, progress=False, confirm=False)
    assert not result.separating and result.bank == 1  # a bank the user chose is never grown
    grown = decay_spectrum(arch, progress=False, confirm=False)
    assert grown.separating and grown.exponents == {0: 4, 1: 3, 5: 3}
    assert "adaptive steps:" in grown.method


def test_rank_check_refuses_when_no_growth_reaches_the_generic_rank():
    from symattn.observe import rank_check

    arch = Architecture.uniform(layers=2, width=2, rank=1, tokens=3)
    check = rank_check(arch, ["scores:1"], confirm=False)
    assert check.generic_total == 10 and "adaptive steps:" in check.method
    # one input never shows all 10 effective directions, and a bank the user chose is never grown
    with pytest.raises(SymattnError, match="generic rank 2 stays below the effective dimension 10 \\(bank 1, "
                                           "truncation eps\\^8\\)"):
        rank_check(arch, ["scores:1"], bank=1, truncation=8, confirm=False)
