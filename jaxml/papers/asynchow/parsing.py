"""The AsyncHow answer parser and correctness rule (the release's `benchmark_llm.py::measure_perf`).

    is_correct('It takes "2 hours and 30 minutes".', Interval(9000, 9000))   # True
    parse_answer('"two and a half hours"')     # Parsed(lo=9000.0, hi=9000.0, text='two and a half hours', ...)
    parse_answer('"3 to 4 hours"').is_range    # True: a range is never correct

Candidates: the first and the last match of the greedy regex `".*"` (one per line holding two or more
double quotes, from the line's first quote to its last, as the release reads them), lower-cased; a
response without such a match gives one candidate, the text after its last "is ". Each candidate is
normalised: number words become digits ("forty-five", "twenty five", "one hundred and twenty"), "N and a
half <unit>" / "N <unit> and a half" become N.5, "half a(n) <unit>" / "a half <unit>" 0.5, and "a"/"an"
before a unit 1; then the text after its last '=' and after its last ' or ' is kept, and text from its
first '(' dropped. A candidate holding " to " and a time is a range ("3 to 4 hours"): wrong. Otherwise
every number+unit span is summed (`plan.duration_spans`: sec/second(s)/s, min/mins/minute(s),
h/hr/hrs/hour(s), d/day(s), w/week(s), m/month(s), y/year(s); "1,200", "1.5", "30min"), months and years
as intervals ([28, 31] and [365, 366] days). The first candidate with at least one span decides: it is
correct iff its lower or its upper end lies within the gold [lo, hi] (the release's check; so "1 month",
[28, 31] days, is wrong against an exact 30 days).

Our reading, where the committed `measure_perf` differs (`release_is_correct` keeps its behaviour):
- it converts number words only when "and a half" occurs, and then by replacing the first occurrence
  of each word's text anywhere ("two and a half hours" -> "2 1nd a half hours": wrong); we convert them
  always, by whole words;
- it crashes (UnboundLocalError) on a response without double quotes unless it holds "and a half"; we
  read the text after the last "is " (as a word: "this " does not count);
- it raises on "hr" (a unit its span regex captures but its unit table lacks) and on a unit glued to
  its number ("30min", "2h"), and then silently falls to the last candidate; we read both;
- it returns False at the first candidate without a time span (e.g. a first quote "no idea") instead
  of trying the last; we let the first candidate with a time decide;
- its "half a " -> "0.5" (no space: "half a day" -> "0.5day") only runs with "and a half"; we handle
  "half a(n) <unit>" always.
Kept as in the release: the greedy per-line quote regex (two quoted times on one line are one candidate
and are summed), " to " anywhere in the kept text marks a range, the '=' / ' or ' / '(' cuts, the month
and year intervals, and the either-end rule.
"""

from __future__ import annotations

import dataclasses
import re

from jaxml.papers.asynchow.plan import DAY, UNIT_ALIASES, UNIT_SECONDS, Interval, duration_spans

_QUOTED = re.compile(r'".*"')          # the release's regex: greedy, per line (no DOTALL)
_IS = re.compile(r"\bis\s", re.IGNORECASE)

_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
NUMBER_WORDS = {**{w: i for i, w in enumerate(_SMALL)}, **_TENS, "hundred": 100, "thousand": 1000}
_NUM = "(?:" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b"
# A run of number words: joined by spaces or hyphens, or by "and" after hundred/thousand.
_NUM_RUN = re.compile(rf"\b{_NUM}(?:(?:(?<=hundred)\s+and\s+|(?<=thousand)\s+and\s+|-|\s+){_NUM})*")
# Unit words for "a/an <unit>" and "half <unit>" (no one-letter aliases: "a m" is not "1 month").
_UNIT_WORD = "(?:" + "|".join(sorted((u for u in UNIT_ALIASES if len(u) > 1), key=len, reverse=True)) + r")\b"
_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_N_AND_HALF_UNIT = re.compile(rf"({_NUMBER})\s+and\s+a\s+half\s+({_UNIT_WORD})")
_HALF_UNIT = re.compile(rf"\b(?:a\s+)?half\s+(?:an?\s+)?({_UNIT_WORD})")
_A_UNIT = re.compile(rf"\ban?\s+({_UNIT_WORD})")
_N_UNIT_AND_HALF = re.compile(rf"({_NUMBER})\s*({_UNIT_WORD})\s+and\s+a\s+half\b")


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A parsed answer: [lo, hi] seconds (0, 0 for a range), the candidate (lower-cased, outer quotes
    removed), its normalised and cut text, and whether it is a range ("3 to 4 hours", never correct)."""

    lo: float
    hi: float
    text: str
    normalized: str = ""
    is_range: bool = False

    @property
    def interval(self) -> Interval:
        return Interval(self.lo, self.hi)


def _words_value(run: str) -> int:
    total = current = 0
    for word in re.findall(r"[a-z]+", run):
        if word == "and":
            continue
        value = NUMBER_WORDS[word]
        if value == 100:
            current = (current or 1) * 100
        elif value == 1000:
            total, current = total + (current or 1) * 1000, 0
        else:
            current += value
    return total + current


def _plus_half(m: re.Match) -> str:
    return f"{float(m.group(1).replace(',', '')) + 0.5} {m.group(2)}"


def normalize(candidate: str) -> str:
    """Number words to digits and the half / "a(n) <unit>" forms to numbers (lower-cased)."""
    text = _NUM_RUN.sub(lambda m: str(_words_value(m.group(0))), candidate.lower())
    text = _N_AND_HALF_UNIT.sub(_plus_half, text)           # "2 and a half hours" -> "2.5 hours"
    text = _HALF_UNIT.sub(r"0.5 \1", text)                   # "half an hour" -> "0.5 hour"
    text = _A_UNIT.sub(r"1 \1", text)                        # "an hour" -> "1 hour"
    return _N_UNIT_AND_HALF.sub(_plus_half, text)            # "1 hour and a half" -> "1.5 hour"


def candidates(response: str) -> list[str]:
    """The first and last greedy double-quoted strings (outer quotes removed), lower-cased; without any,
    the text after the last "is " (the whole response if none)."""
    quoted = _QUOTED.findall(response)
    if quoted:
        return [quoted[0][1:-1].lower(), quoted[-1][1:-1].lower()]
    tail = list(_IS.finditer(response))
    return [(response[tail[-1].end():] if tail else response).lower()]


def parse_candidate(candidate: str) -> Parsed | None:
    """One candidate's time, or None when it holds no number+unit span."""
    text = normalize(candidate)
    text = text.split("=")[-1].split(" or ")[-1].split("(")[0]
    spans = duration_spans(text)
    if not spans:
        return None
    if " to " in text:
        return Parsed(0.0, 0.0, candidate, text, is_range=True)
    # Rounded to microseconds, as the release's timedelta arithmetic is.
    lo = round(sum(n * UNIT_SECONDS[u][0] for n, u in spans), 6)
    hi = round(sum(n * UNIT_SECONDS[u][1] for n, u in spans), 6)
    return Parsed(lo, hi, candidate, text)


def parse_answer(response: str | None) -> Parsed | None:
    """The answer of a response: the first candidate (`candidates`) holding a time, or None."""
    for candidate in candidates(response or ""):
        parsed = parse_candidate(candidate)
        if parsed is not None:
            return parsed
    return None


def within_gold(lo: float, hi: float, gold: Interval) -> bool:
    """The benchmark's correctness rule for an answer interval [lo, hi]: either end within [gold.lo, gold.hi]."""
    return gold.contains(lo) or gold.contains(hi)


def parsed_is_correct(parsed: Parsed | None, gold: Interval) -> bool:
    """True iff `parsed` exists, is not a range, and `within_gold`."""
    return parsed is not None and not parsed.is_range and within_gold(parsed.lo, parsed.hi, gold)


def is_correct(response: str | None, gold: Interval) -> bool:
    """True iff the parsed answer is not a range and its lower or upper end lies within [gold.lo, gold.hi]."""
    return parsed_is_correct(parse_answer(response), gold)


# --- The committed release, quirks included -----------------------------------------------------------

_R_NUM_WORDS = {**{w: i for i, w in enumerate(_SMALL) if i}, **_TENS, "a": 1, "an": 1, "hundred": 100,
                "thousand": 1000, "million": 1_000_000}
_R_NUM_SET = set(_R_NUM_WORDS) | {"half"}
_R_SPAN = re.compile(r"\b\d+(?:,\d{3})*(?:\.\d+)?\s*(?:min|minute|minutes|hr|hour|hours|sec|second|seconds|week"
                     r"|weeks|day|days|month|months|year|years|s|h|m|d|w)")
_R_UNITS = {**dict.fromkeys(("year", "years", "y"), (365 * DAY, 366 * DAY)),
            **dict.fromkeys(("month", "months", "m"), (28 * DAY, 31 * DAY)),
            **{u: UNIT_SECONDS[c] for c, us in (("week", ("week", "weeks", "w")), ("day", ("day", "days", "d")),
                                                 ("hour", ("hour", "hours", "h")),
                                                 ("minute", ("minute", "min", "minutes", "mins")),
                                                 ("second", ("second", "sec", "seconds", "secs"))) for u in us}}


def _release_words(sentence: str) -> str:
    """`text_to_number_updated`: each letter/hyphen word with a positive value replaces the first
    occurrence of its text anywhere in the sentence ('a' may hit the 'a' of 'and')."""
    for word in re.findall(r"\b(?:[a-zA-Z]+(?:-)?)+\b", sentence):
        if word == "and":
            continue
        value = _R_NUM_WORDS[word] if word in _R_NUM_WORDS else sum(_R_NUM_WORDS.get(w, 0) for w in word.split("-"))
        if word in _R_NUM_WORDS and value >= 100:
            value = 0                      # a lone scale word multiplies a zero
        if value > 0:
            sentence = sentence.replace(word, str(value), 1)
    return sentence


def _release_half(answer: str) -> str | None:
    found = re.findall(r"\b\w+ and a half", answer)
    if not found:
        return None
    prec = re.findall(r"\b\w+", found[0])[0]
    if prec not in _R_NUM_SET:
        answer = answer.replace(found[0], f"and half {prec}")
    return _release_words(answer.replace("half a ", "0.5")).replace(" and half", ".5")


def release_is_correct(response: str, gold: Interval) -> bool:
    """The committed `measure_perf(response, gold)[1]`, quirks included; False where it would crash."""
    quoted = _QUOTED.findall(response)
    if quoted:
        cands = [quoted[0].lower(), quoted[-1].lower()]
        cands = [c if _release_half(c) is None else _release_half(c) for c in cands]
    else:
        half = _release_half(response.split("is ")[-1].lower())
        if half is None:
            return False                   # the release: UnboundLocalError
        cands = [half]
    for answer in cands:
        answer = answer.split("=")[-1] if "=" in answer else answer
        answer = answer.split(" or ")[-1] if " or " in answer else answer
        answer = answer.split("(")[0]
        if " to " in answer:
            return False
        lo = hi = 0.0
        try:
            for span in _R_SPAN.findall(answer):
                n = float(re.findall(rf"\b{_NUMBER}", span)[-1].replace(",", ""))
                a, b = _R_UNITS[re.findall(r"\b[a-z]+", span)[-1]]   # IndexError / KeyError: next candidate
                lo, hi = lo + round(n * a, 6), hi + round(n * b, 6)
        except (IndexError, KeyError):
            continue
        return within_gold(lo, hi, gold)
    return False


__all__ = ["Parsed", "NUMBER_WORDS", "normalize", "candidates", "parse_candidate", "parse_answer", "is_correct",
           "release_is_correct"]
