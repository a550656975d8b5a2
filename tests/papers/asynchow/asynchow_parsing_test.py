"""The AsyncHow answer parser: a table of tricky answers with their intervals worked out by hand, the
correctness rule, and the committed release's quirks."""

import pytest

from jaxml.papers.asynchow.parsing import candidates, is_correct, normalize, parse_answer, release_is_correct
from jaxml.papers.asynchow.plan import Interval

M, H, D = 60, 3600, 86400
RANGE = "range"

# response -> (lo, hi) seconds, RANGE, or None (no time found).
TABLE = [
    ('"2 hours and 30 minutes"', (9000, 9000)),
    ('"two and a half hours"', (9000, 9000)),
    ('"an hour"', (H, H)),
    ('"a day"', (D, D)),
    ('"1,200 minutes"', (72000, 72000)),
    ('"3 to 4 hours"', RANGE),
    ('"It takes from 2 to 3 days"', RANGE),
    ('The answer is "5 days".\nOn reflection, it is "6 days".', (5 * D, 5 * D)),        # first candidate decides
    ('The answer is "5 days" ... so "6 days"', (11 * D, 11 * D)),     # one line: one greedy candidate, summed
    ('x = 3 hours + 2 hours = "5 hours"', (5 * H, 5 * H)),
    ('"3 hours + 2 hours = 5 hours"', (5 * H, 5 * H)),                # after the last '='
    ('"3 hours = 180 minutes"', (180 * M, 180 * M)),
    ('"10 minutes or 15 minutes"', (15 * M, 15 * M)),                 # after the last ' or '
    ('"45 min (0.75 h)"', (45 * M, 45 * M)),                          # '(' onwards dropped
    ('It is "3 days (72 hours)"', (3 * D, 3 * D)),
    ('"1 month"', (28 * D, 31 * D)),
    ('"1 year"', (365 * D, 366 * D)),
    ('"2 months and 3 days"', (59 * D, 65 * D)),
    ('"30min"', (30 * M, 30 * M)),
    ('"5h"', (5 * H, 5 * H)),
    ('"1.5 hours"', (5400, 5400)),
    ('"0.5 days"', (D / 2, D / 2)),
    ('The shortest time is 20 minutes.', (20 * M, 20 * M)),           # no quotes: after the last "is "
    ('The time is 20 minutes for this task.', (20 * M, 20 * M)),      # "this " is not "is "
    ('"forty-five minutes"', (45 * M, 45 * M)),
    ('"twenty five minutes"', (25 * M, 25 * M)),
    ('"one hundred and twenty minutes"', (120 * M, 120 * M)),
    ('"twelve hours"', (12 * H, 12 * H)),
    ('"half an hour"', (30 * M, 30 * M)),
    ('"half a day"', (D / 2, D / 2)),
    ('"a half hour"', (30 * M, 30 * M)),
    ('"an hour and a half"', (5400, 5400)),
    ('"2 hours and a half"', (9000, 9000)),
    ('"2 hrs"', (2 * H, 2 * H)),
    ('"1 hr 15 mins"', (75 * M, 75 * M)),
    ('"90 seconds"', (90, 90)),
    ('"2 weeks"', (14 * D, 14 * D)),
    ('"1 week 2 days"', (9 * D, 9 * D)),
    ('"1 d"', (D, D)),
    ('First "no idea", then\nfinally "55 min"', (55 * M, 55 * M)),    # first candidate has no time: the last
    ('Answer: \u201c5 hours\u201d', (5 * H, 5 * H)),                   # curly quotes are not double quotes
    ("", None),
    ('"I cannot determine the time."', None),
    ("There is no way to know.", None),
    ('"to bake bread"', None),                                        # " to " without a time is no range
]


@pytest.mark.parametrize("response, expected", TABLE)
def test_parse_table(response, expected):
    parsed = parse_answer(response)
    if expected is None:
        assert parsed is None
    elif expected == RANGE:
        assert parsed.is_range and not is_correct(response, Interval(0, 100 * D))
    else:
        assert not parsed.is_range
        assert (parsed.lo, parsed.hi) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("response, gold, correct", [
    ('"1 month"', Interval(28 * D, 31 * D), True),
    ('"1 month"', Interval(30 * D, 30 * D), False),       # neither 28 nor 31 days is 30 days
    ('"4 weeks"', Interval(28 * D, 31 * D), True),
    ('"30 days"', Interval(28 * D, 31 * D), True),
    ('"2 months"', Interval(60 * D, 70 * D), True),        # the upper end, 62 days, is in
    ('"2 months"', Interval(63 * D, 70 * D), False),
    ('"3 to 4 hours"', Interval(3 * H, 3 * H), False),
    ('"3 to 4 hours"', Interval(4 * H, 4 * H), False),
    ('The answer is "5 days".\nSo "6 days".', Interval(5 * D, 5 * D), True),
    ('The answer is "5 days".\nSo "6 days".', Interval(6 * D, 6 * D), False),
    ('"2 hours and 30 minutes"', Interval(9000, 9000), True),
    ('"2 hours and 30 minutes"', Interval(9001, 9001), False),
    ('"10 minutes or 15 minutes"', Interval(10 * M, 10 * M), False),
    ("", Interval(0, 0), False),
    ('"I cannot determine the time."', Interval(0, 0), False),
])
def test_is_correct(response, gold, correct):
    assert is_correct(response, gold) is correct


def test_candidates_and_normalize():
    assert candidates('a "x" b "y"\nc "z"') == ['x" b "y', "z"]
    assert candidates("The time is 3 hours, which is 180 MINUTES") == ["180 minutes"]
    assert candidates("no verb here") == ["no verb here"]
    assert normalize("Twenty-Five Minutes and a thousand seconds") == "25 minutes and a 1000 seconds"
    assert normalize("one and two") == "1 and 2"           # "and" joins number words only after hundred/thousand
    assert normalize("someone often") == "someone often"   # whole words only


@pytest.mark.parametrize("response, seconds, release, ours", [
    ('"2 hours and 30 minutes"', 9000, True, True),
    ('"an hour and a half"', 5400, True, True),
    ('"10 minutes or 15 minutes"', 900, True, True),
    ('"two and a half hours"', 9000, False, True),         # release: "2 1nd a half hours"
    ('"an hour"', H, False, True),                         # release: words converted only with "and a half"
    ('"2 hrs"', 2 * H, False, True),                       # release: "hr" raises, falls through
    ('"30min"', 30 * M, False, True),                      # release: glued unit raises
    ('"2 hrs" hmm\n"2 hours"', 2 * H, True, True),         # ... to the last candidate
    ("The shortest time is 20 minutes.", 20 * M, False, True),     # release: UnboundLocalError
    ("The time is two and a half hours", 9000, False, True),
    ('First "no idea", then\nfinally "55 min"', 55 * M, False, True),
    ('"3 to 4 hours"', 3 * H, False, False),
])
def test_release_is_correct(response, seconds, release, ours):
    gold = Interval(seconds, seconds)
    assert release_is_correct(response, gold) is release
    assert is_correct(response, gold) is ours
