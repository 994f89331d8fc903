"""tensormem.plan, tensormem.strategies and the plan report."""

import itertools
import random

import numpy as np
import pytest

import tensormem


def peak_live(sizes, starts, ends):
    steps = range(min(starts), max(ends))
    return max(sum(s for s, a, b in zip(sizes, starts, ends) if a <= t < b) for t in steps)


def assert_valid(result, sizes, starts, ends, alignment=1):
    offsets = result.offsets
    assert len(offsets) == len(sizes)
    assert all(offset % alignment == 0 for offset in offsets)
    assert result.total == max(o + s for o, s in zip(offsets, sizes))
    for i, j in itertools.combinations(range(len(sizes)), 2):
        live_together = starts[i] < ends[j] and starts[j] < ends[i]
        apart = offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
        assert not live_together or apart, (i, j, offsets)


def random_set(seed, count=40):
    rng = random.Random(seed)
    starts = [rng.randrange(0, 30) for _ in range(count)]
    ends = [start + rng.randrange(1, 10) for start in starts]
    sizes = [rng.randrange(1, 5000) for _ in range(count)]
    return sizes, starts, ends


def test_optimal_plan_is_valid_and_meets_the_bound():
    sizes, starts, ends = [4096, 1024, 2048], [0, 1, 2], [2, 3, 4]
    result = tensormem.plan(sizes, starts, ends)
    assert_valid(result, sizes, starts, ends)
    assert result.strategy == "optimal"
    assert result.lower_bound == peak_live(sizes, starts, ends) == 5120
    assert result.total == 5120 and result.proven_optimal and result.ratio == 1.0


@pytest.mark.parametrize("strategy", ["optimal", "greedy_by_size", "greedy_in_order", "naive"])
def test_every_strategy_gives_a_valid_plan(strategy):
    sizes, starts, ends = random_set(seed=len(strategy))
    result = tensormem.plan(sizes, starts, ends, strategy=strategy, time_limit=1.0)
    assert_valid(result, sizes, starts, ends)
    assert result.lower_bound == peak_live(sizes, starts, ends)
    assert result.total >= result.lower_bound
    if result.proven_optimal and strategy != "optimal":
        assert result.total == result.lower_bound


def test_a_search_cut_short_in_counted_time_is_the_same_every_run():
    rng = random.Random(11)
    starts = [rng.randrange(0, 200) for _ in range(300)]
    ends = [start + rng.randrange(1, 67) for start in starts]
    sizes = [rng.randrange(1, 5000) for _ in range(300)]
    plans = [
        tensormem.plan(sizes, starts, ends, time_limit=0.004, alignment=16, counted_time=True)
        for _ in range(3)
    ]
    assert_valid(plans[0], sizes, starts, ends, alignment=16)
    assert not plans[0].proven_optimal  # the limit, counted, stopped it
    assert plans[0].extra["seconds_to_best"] > 0  # after the start plan
    for again in plans[1:]:
        assert again.offsets == plans[0].offsets
        assert again.extra["seconds_to_best"] == plans[0].extra["seconds_to_best"]


def test_naive_plan_is_not_claimed_optimal():
    sizes, starts, ends = [100, 100], [0, 5], [1, 6]  # never live together
    result = tensormem.plan(sizes, starts, ends, strategy="naive")
    assert result.total == 200 and result.lower_bound == 100
    assert not result.proven_optimal


def test_numpy_arrays_give_the_same_plan_as_lists():
    sizes, starts, ends = random_set(seed=7)
    from_lists = tensormem.plan(sizes, starts, ends, strategy="greedy_by_size")
    from_arrays = tensormem.plan(
        np.array(sizes, dtype=np.int64), np.array(starts, dtype=np.int32), np.array(ends),
        strategy="greedy_by_size",
    )
    assert from_arrays.offsets == from_lists.offsets
    assert from_arrays.total == from_lists.total


def test_alignment_is_honoured():
    sizes, starts, ends = random_set(seed=3, count=20)
    result = tensormem.plan(sizes, starts, ends, strategy="greedy_by_size", alignment=64)
    assert_valid(result, sizes, starts, ends, alignment=64)


def test_strategies_lists_the_planners():
    names = tensormem.strategies()
    assert "optimal" in names and "greedy_by_size" in names
    assert all(isinstance(text, str) and text for text in names.values())


@pytest.mark.parametrize(
    "arguments, message",
    [
        (([1, 2], [0, 1], [1]), "same length"),
        (([1, -2], [0, 1], [1, 2]), "sizes[1] is negative"),
        (([1, 2], [0, 3], [1, 3]), "lifetime"),
    ],
)
def test_bad_input_raises_value_error_naming_it(arguments, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        tensormem.plan(*arguments, strategy="greedy_by_size")


def test_unknown_strategy_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown strategy 'fastest'.*greedy_by_size"):
        tensormem.plan([1], [0], [1], strategy="fastest")


def test_non_integer_sizes_are_refused():
    with pytest.raises(TypeError):
        tensormem.plan([1.5], [0], [1])


def test_plan_report_is_written(tmp_path):
    sizes, starts, ends = random_set(seed=11, count=15)
    result = tensormem.plan(sizes, starts, ends, strategy="greedy_by_size")
    page = tmp_path / "plan.html"
    tensormem.write_plan_report(page, sizes, starts, ends, result.offsets, title="random set")
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "random set" in text


def test_plan_report_refuses_overlapping_offsets(tmp_path):
    with pytest.raises(ValueError):
        tensormem.write_plan_report(tmp_path / "bad.html", [8, 8], [0, 0], [2, 2], [0, 4])
