"""AsyncHow plans: validation, the critical-path solver against path enumeration and hand-worked cases,
and the generator's splits."""

import collections

import numpy as np
import pytest

from jaxml.data import wordnet
from jaxml.papers.asynchow import generator
from jaxml.papers.asynchow.plan import (DAY, Interval, Plan, PlanError, all_paths, critical_path,
                                        critical_path_enumerate, critical_steps, earliest_finish, format_seconds,
                                        parse_duration, release_task_time)

H, M = 3600, 60


@pytest.mark.parametrize("text,lo,hi", [
    ("30 minutes", 1800, 1800), ("1 minute", 60, 60), ("2 hours", 7200, 7200), ("3 hrs", 10800, 10800),
    ("1 hour 30 minutes", 5400, 5400), ("1,200 minutes", 72000, 72000), ("2.5 hours", 9000, 9000),
    ("4 days", 4 * DAY, 4 * DAY), ("2 weeks", 14 * DAY, 14 * DAY), ("1 month", 28 * DAY, 31 * DAY),
    ("2 months", 56 * DAY, 62 * DAY), ("1 year", 365 * DAY, 366 * DAY), ("45 sec", 45, 45),
    ("about 10 min", 600, 600),
])
def test_parse_duration(text, lo, hi):
    assert parse_duration(text) == Interval(lo, hi)


@pytest.mark.parametrize("text", ["soon", "", "minutes", "3 fortnights"])
def test_parse_duration_rejects_text_without_a_unit(text):
    with pytest.raises(PlanError, match="cannot parse the duration"):
        parse_duration(text)


def test_format_seconds():
    assert format_seconds(5400) == "1 hour 30 minutes"
    assert format_seconds(DAY + 60) == "1 day 1 minute"
    assert format_seconds(15 * DAY) == "2 weeks 1 day"
    assert format_seconds(0) == "0 minutes"
    assert parse_duration(format_seconds(123456)) == Interval(123420 + 36, 123456)


def _plan(durations, deps):
    return Plan("How to test", tuple(f"Step text {i}." for i in range(len(durations))), tuple(durations),
                tuple(deps))


def test_hand_worked_async_plan():
    # 1 (20 min) -> 3 (40 min) -> 5 (5 min); 2 (15 min) -> 3; 4 (2 hours) alone: the answer is 4's 2 hours
    plan = _plan(["20 minutes", "15 minutes", "40 minutes", "2 hours", "5 minutes"], [(1, 3), (2, 3), (3, 5)])
    assert critical_path(plan) == Interval(2 * H, 2 * H)
    f_lo, f_hi = earliest_finish(plan)
    np.testing.assert_array_equal(f_hi, [20 * M, 15 * M, 60 * M, 120 * M, 65 * M])
    assert critical_steps(plan) == [4]
    assert plan.plan_type == "async"
    # edges: 3 constraints + START->1, 2, 4 + 4->END, 5->END = 8; V = 5 steps + 2
    assert plan.edge_list() == [("1", "3"), ("2", "3"), ("3", "5"), ("START", "1"), ("START", "2"),
                                ("START", "4"), ("4", "END"), ("5", "END")]
    assert plan.ve_count == 15
    assert sorted(map(tuple, all_paths(plan))) == sorted([("START", "1", "3", "5", "END"), ("START", "2", "3", "5", "END"),
                                                         ("START", "4", "END")])
    longer = _plan(["20 minutes", "15 minutes", "90 minutes", "2 hours", "15 minutes"], [(1, 3), (2, 3), (3, 5)])
    assert critical_path(longer) == Interval(125 * M, 125 * M) and critical_steps(longer) == [1, 3, 5]


def test_interval_ends_are_maximised_separately_and_the_release_rule_differs():
    # step 1 (30 days) and step 2 (1 month = [28, 31] days) both precede step 3 (1 day):
    # paths 1-3: [31, 31] days, 2-3: [29, 32] days; longest per end: [31, 32] days.
    plan = _plan(["30 days", "1 month", "1 day"], [(1, 3), (2, 3)])
    assert critical_path(plan) == critical_path_enumerate(plan) == Interval(31 * DAY, 32 * DAY)
    # The release visits path 1-3 first ([31, 31]), then 2-3 has a larger hi and resets the answer to [29, 32].
    gold, correct = release_task_time(plan)
    assert gold == Interval(29 * DAY, 32 * DAY)
    assert correct == [["START", "2", "3", "END"]]
    # In the other order the release's rule lands on [31, 32] as well.
    swapped = _plan(["1 month", "30 days", "1 day"], [(1, 3), (2, 3)])
    assert release_task_time(swapped)[0] == Interval(31 * DAY, 32 * DAY)


def test_sequential_and_parallel_closed_forms():
    seq = _plan(["1 hour", "2 hours", "1 year"], [(1, 2), (2, 3)])
    assert seq.plan_type == "sequential" and seq.ve_count == 2 * 3 + 3
    assert critical_path(seq) == Interval(3 * H + 365 * DAY, 3 * H + 366 * DAY)
    par = _plan(["1 hour", "2 hours", "3 months"], [])
    assert par.plan_type == "parallel" and par.ve_count == 3 * 3 + 2
    assert critical_path(par) == Interval(84 * DAY, 93 * DAY)


def test_solver_equals_path_enumeration_on_generated_plans():
    plans = generator.generate_plans(600, seed=7, text_source="synthetic")
    assert {p.plan_type for p in plans} == {"sequential", "parallel", "async"}
    intervals = 0
    for plan in plans:
        dp = critical_path(plan)
        assert dp == critical_path_enumerate(plan), plan
        assert release_task_time(plan)[0].hi == dp.hi
        lo, hi = plan.intervals()
        path = [s - 1 for s in critical_steps(plan)]
        assert hi[path].sum() == dp.hi
        intervals += not dp.exact
    assert 10 < intervals < 100     # months/years make about 5% of golds intervals


@pytest.mark.parametrize("kwargs,match", [
    (dict(durations=["1 hour", "2 hours"], deps=[(1, 2), (2, 1)]), "cycle 1 -> 2 -> 1"),
    (dict(durations=["1 hour", "2 hours", "1 hour"], deps=[(1, 2), (2, 3), (3, 1)]), "cycle 1 -> 2 -> 3 -> 1"),
    (dict(durations=["1 hour", "2 hours"], deps=[(1, 3)]), "names step 3; steps are 1..2"),
    (dict(durations=["1 hour", "2 hours"], deps=[(1, 1)]), "precede itself"),
    (dict(durations=["1 hour", "2 hours"], deps=[(1, 2), (1, 2)]), "duplicate"),
    (dict(durations=["1 hour", "whenever"], deps=[]), "step 2: cannot parse the duration 'whenever'"),
])
def test_invalid_plans_are_refused_with_the_reason(kwargs, match):
    with pytest.raises(PlanError, match=match):
        _plan(**kwargs)
    with pytest.raises(PlanError, match="2 steps but 1 durations"):
        Plan("How to x", ("a", "b"), ("1 hour",))


def test_from_edge_list_checks_connection():
    steps, durs = ("a.", "b.", "c."), ("1 hour", "2 hours", "3 hours")
    good = [("1", "2"), ("START", "1"), ("START", "3"), ("2", "END"), ("3", "END")]
    assert Plan.from_edge_list("How to x", steps, durs, good).deps == ((1, 2),)
    with pytest.raises(PlanError, match=r"steps \[3\] are disconnected \(no edge into them"):
        Plan.from_edge_list("How to x", steps, durs, [e for e in good if e != ("START", "3")])
    with pytest.raises(PlanError, match=r"steps \[3\] are disconnected \(no edge out of them"):
        Plan.from_edge_list("How to x", steps, durs, [e for e in good if e != ("3", "END")])
    with pytest.raises(PlanError, match="disagree"):
        Plan.from_edge_list("How to x", steps, durs, good + [("START", "2")])
    with pytest.raises(PlanError, match="names '7'"):
        Plan.from_edge_list("How to x", steps, durs, good + [("7", "END")])


def test_generator_types_steps_and_texts():
    plans = generator.generate_plans(400, seed=3)
    counts = collections.Counter(p.plan_type for p in plans)
    assert counts["async"] > counts["sequential"] > 0 and counts["parallel"] > 0
    phrases = {p for _, p in wordnet.verb_phrases()}
    for p in plans:
        assert 3 <= p.n <= (7 if p.plan_type != "async" else 17)
        assert p.task in phrases and all(s[0].lower() + s[1:-1] in phrases for s in p.steps)
    assert [p.to_dict() for p in generator.generate_plans(20, seed=3)] == [p.to_dict() for p in plans[:20]]
    with pytest.raises(ValueError, match="plan_type"):
        generator.generate_plan(np.random.default_rng(0), "circular", 4)
    with pytest.raises(ValueError, match="3 to 17 steps"):
        generator.generate_plan(np.random.default_rng(0), "async", 2)


def test_splits_are_fixed_and_disjoint():
    test = generator.split("test", 300, text_source="synthetic")
    val = generator.split("validation", 300, text_source="synthetic")
    train = generator.split("train", 1500, text_source="synthetic")
    keys = [{generator.structure_key(p) for p in s} for s in (train, val, test)]
    assert not (keys[0] & keys[1]) and not (keys[0] & keys[2]) and not (keys[1] & keys[2])
    assert all(generator.split_of(p) == "test" for p in test)
    assert [p.to_dict() for p in generator.split("test", 50, text_source="synthetic")] == [p.to_dict() for p in test[:50]]
    with pytest.raises(ValueError, match="split 'dev'"):
        generator.split("dev")


def test_complexity_bins():
    assert [generator.complexity_bin(v) for v in (9, 12, 13, 16, 17, 20, 21, 25, 26, 68)] == [
        "<=12", "<=12", "13-16", "13-16", "17-20", "17-20", "21-25", "21-25", ">=26", ">=26"]
