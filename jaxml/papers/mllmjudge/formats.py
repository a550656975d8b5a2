"""The MLLM-as-a-Judge release's JSONL files: one typed item per line, validated, round-tripped.

The benchmark (Chen et al., ICML 2024; repo `Dongping-Chen/MLLM-Judge`, `Dataset/Benchmark/`,
`Dataset/Benchmark_Lite/`, the Hard/HQ splits) has three kinds of file, one JSON object a line:

  * score (`score.jsonl`): `{score_id, name, answer, id, instruction, image_path, original_dataset,
    human}`. `human` is the annotators' 1-5 score, stored sometimes as an int (`3`) and sometimes
    as a string (`"4"`); it is cast to int here and anything else (`4.5`, `"6"`, `true`) is
    rejected. The HQ split's `Score.jsonl` names the same field `Human_answer`; it is accepted as
    the gold score when `human` is absent, and written back under the name it was read with.
  * pair (`pair.jsonl`): `{id, pair_id, image_path, original_dataset, instruction, answer1,
    answer2, human_answer}` with `answer1`/`answer2` = `{name, answer}` and `human_answer` in
    `{"A", "B", "C"}` (`C` = tie).
  * batch (`batch.jsonl`): `{id, instruction, image_path, original_dataset, answers: [{name,
    answer}, ...], human_answer}`; `human_answer` is the best->worst ranking of the answer
    positions, a permutation of the first `len(answers)` letters (`"CDAB"` for 4 answers).

`id` is the image/instruction id and is NOT unique in score and pair files (one image has several
answers and pairs); `score_id`, `pair_id` and the batch `id` identify an item. Fields a file has
beyond these (the HQ/Lite splits' `evaluator: {judge_Evaluator, judge_human, analysis,
hallucination}`, `result`, `comparison`, `turn`, ...) are kept, in order, in the item's `extra`
dict, so nothing is silently dropped.

`read_jsonl(path, kind)` validates every line and raises `JsonlFormatError` (a `ValueError`) that
names the file, the 1-based line number and the field. `write_jsonl(items, path)` writes them
back: `read_jsonl(write_jsonl(items))` gives equal items, and a file that `read_jsonl` accepted
comes back with the same keys in the same order and the same values, the one normalisation being
a string human score (`"4"`) written as the int (`4`). Lines are written with `ensure_ascii=False`
(as the release's pair files are); whitespace-only lines are skipped on reading.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Iterable, Literal, Mapping, Sequence, Union

Kind = Literal["score", "pair", "batch"]
KINDS: tuple[str, ...] = ("score", "pair", "batch")
PAIR_VERDICTS: tuple[str, ...] = ("A", "B", "C")  # C = tie
SCORE_RANGE: tuple[int, int] = (1, 5)

# The release's key order per kind (the order `write_jsonl` uses for items built in code).
SCORE_KEYS = ("score_id", "name", "answer", "id", "instruction", "image_path", "original_dataset", "human")
PAIR_KEYS = ("id", "pair_id", "image_path", "original_dataset", "instruction", "answer1", "answer2", "human_answer")
BATCH_KEYS = ("id", "instruction", "image_path", "original_dataset", "answers", "human_answer")
ANSWER_KEYS = ("name", "answer")
_HQ_HUMAN_KEY = "Human_answer"  # the HQ split's name for the score gold


class JsonlFormatError(ValueError):
    """A line of a release file that does not have the documented format.

    Attributes: `path` (the file), `line` (1-based line number), `field` (the offending field, as a
    dotted path like `answers[2].name`; None for a line that is not a JSON object).
    """

    def __init__(self, path: str, line: int, field: str | None, message: str):
        self.path, self.line, self.field = path, line, field
        where = f"{path}:{line}" + (f": field '{field}'" if field is not None else "")
        super().__init__(f"{where}: {message}")


@dataclasses.dataclass(frozen=True)
class Answer:
    """One assistant's response: `name` is the model (llava, cogvlm, gpt4, gemini, ...)."""
    name: str
    answer: str
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ScoreItem:
    """One response to score 1-5; `human` is the gold score (int)."""
    score_id: int
    name: str
    answer: str
    id: int
    instruction: str
    image_path: str
    original_dataset: str
    human: int
    extra: dict = dataclasses.field(default_factory=dict)
    # The keys as the file had them, in order (None for items built in code); only for writing back.
    key_order: tuple[str, ...] | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class PairItem:
    """Two responses to compare; `human_answer` is "A" (answer1 better), "B" or "C" (tie)."""
    id: int
    pair_id: int
    image_path: str
    original_dataset: str
    instruction: str
    answer1: Answer
    answer2: Answer
    human_answer: str
    extra: dict = dataclasses.field(default_factory=dict)
    key_order: tuple[str, ...] | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class BatchItem:
    """Several responses to rank; `human_answer` is the best->worst ranking of their positions."""
    id: int
    instruction: str
    image_path: str
    original_dataset: str
    answers: tuple[Answer, ...]
    human_answer: str
    extra: dict = dataclasses.field(default_factory=dict)
    key_order: tuple[str, ...] | None = dataclasses.field(default=None, compare=False, repr=False)


Item = Union[ScoreItem, PairItem, BatchItem]


def kind_of(item: Item) -> str:
    """'score', 'pair' or 'batch' for an item; TypeError for anything else."""
    if isinstance(item, ScoreItem):
        return "score"
    if isinstance(item, PairItem):
        return "pair"
    if isinstance(item, BatchItem):
        return "batch"
    raise TypeError(f"expected a ScoreItem, PairItem or BatchItem, got {type(item).__name__}")


def ranking_letters(num_answers: int) -> str:
    """The position letters of a batch with `num_answers` answers: 4 -> "ABCD"."""
    if not isinstance(num_answers, int) or isinstance(num_answers, bool) or not 1 <= num_answers <= 26:
        raise ValueError(f"num_answers must be an int in [1, 26], got {num_answers!r}")
    return "".join(chr(ord("A") + i) for i in range(num_answers))


def is_ranking(text: Any, num_answers: int) -> bool:
    """True if `text` is a permutation of the first `num_answers` letters (e.g. "CDAB" for 4)."""
    return isinstance(text, str) and len(text) == num_answers and sorted(text) == list(ranking_letters(num_answers))


def swap_pair(item: PairItem) -> PairItem:
    """The same comparison with the answer order swapped and the gold flipped (A <-> B, C stays).

    Used for the position-bias check: a judge without position bias gives the flipped verdict.
    """
    if not isinstance(item, PairItem):
        raise TypeError(f"swap_pair expects a PairItem, got {type(item).__name__}")
    flipped = {"A": "B", "B": "A", "C": "C"}[item.human_answer]
    return dataclasses.replace(item, answer1=item.answer2, answer2=item.answer1, human_answer=flipped)


# ----------------------------------------------------------------------------------- parsing


class _LineError(Exception):
    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def _require(obj: Mapping, key: str, prefix: str = "") -> Any:
    if key not in obj:
        raise _LineError(prefix + key, f"missing (the object has keys {sorted(obj)})")
    return obj[key]


def _as_int(value: Any, field: str) -> int:
    # bool is an int subclass in Python; a JSON true/false is not an id.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _LineError(field, f"expected an int, got {type(value).__name__} {value!r}")
    return value


def _as_str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _LineError(field, f"expected a string, got {type(value).__name__} {value!r}")
    return value


def _human_score(value: Any, field: str) -> int:
    lo, hi = SCORE_RANGE
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()):
            raise _LineError(field, f"expected a score {lo}-{hi} (int or string), got the string {value!r}")
        score = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        score = value
    else:
        raise _LineError(field, f"expected a score {lo}-{hi} (int or string), got {type(value).__name__} {value!r}")
    if not lo <= score <= hi:
        raise _LineError(field, f"human score {score} is out of range [{lo}, {hi}]")
    return score


def _answer(value: Any, field: str) -> Answer:
    if not isinstance(value, dict):
        raise _LineError(field, f"expected an object {{name, answer}}, got {type(value).__name__}")
    name = _as_str(_require(value, "name", field + "."), field + ".name")
    text = _as_str(_require(value, "answer", field + "."), field + ".answer")
    return Answer(name, text, {k: v for k, v in value.items() if k not in ANSWER_KEYS})


def _extra(obj: Mapping, known: Iterable[str]) -> dict:
    known = set(known)
    return {k: v for k, v in obj.items() if k not in known}


def item_from_dict(obj: Any, kind: str) -> Item:
    """One parsed JSON object -> a validated item. Raises ValueError naming the field."""
    try:
        return _item_from_dict(obj, kind)
    except _LineError as e:
        raise ValueError(f"field '{e.field}': {e.message}" if e.field else e.message) from None


def _item_from_dict(obj: Any, kind: str) -> Item:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(obj, dict):
        raise _LineError(None, f"expected a JSON object, got {type(obj).__name__}")
    order = tuple(obj)
    if kind == "score":
        human_key = "human" if "human" in obj or _HQ_HUMAN_KEY not in obj else _HQ_HUMAN_KEY
        return ScoreItem(
            score_id=_as_int(_require(obj, "score_id"), "score_id"),
            name=_as_str(_require(obj, "name"), "name"),
            answer=_as_str(_require(obj, "answer"), "answer"),
            id=_as_int(_require(obj, "id"), "id"),
            instruction=_as_str(_require(obj, "instruction"), "instruction"),
            image_path=_as_str(_require(obj, "image_path"), "image_path"),
            original_dataset=_as_str(_require(obj, "original_dataset"), "original_dataset"),
            human=_human_score(_require(obj, human_key), human_key),
            extra=_extra(obj, SCORE_KEYS + (human_key,)),
            key_order=order)
    if kind == "pair":
        verdict = _as_str(_require(obj, "human_answer"), "human_answer")
        if verdict not in PAIR_VERDICTS:
            raise _LineError("human_answer", f"expected one of {PAIR_VERDICTS} (C = tie), got {verdict!r}")
        return PairItem(
            id=_as_int(_require(obj, "id"), "id"),
            pair_id=_as_int(_require(obj, "pair_id"), "pair_id"),
            image_path=_as_str(_require(obj, "image_path"), "image_path"),
            original_dataset=_as_str(_require(obj, "original_dataset"), "original_dataset"),
            instruction=_as_str(_require(obj, "instruction"), "instruction"),
            answer1=_answer(_require(obj, "answer1"), "answer1"),
            answer2=_answer(_require(obj, "answer2"), "answer2"),
            human_answer=verdict,
            extra=_extra(obj, PAIR_KEYS),
            key_order=order)
    answers = _require(obj, "answers")
    if not isinstance(answers, list) or len(answers) < 2:
        raise _LineError("answers", "expected a list of at least 2 {name, answer} objects, got "
                         + (f"a list of {len(answers)}" if isinstance(answers, list) else type(answers).__name__))
    if len(answers) > 26:
        raise _LineError("answers", f"at most 26 answers (positions A-Z), got {len(answers)}")
    parsed = tuple(_answer(a, f"answers[{i}]") for i, a in enumerate(answers))
    ranking = _as_str(_require(obj, "human_answer"), "human_answer")
    if not is_ranking(ranking, len(parsed)):
        raise _LineError("human_answer", f"expected a best->worst ranking that is a permutation of "
                         f"{ranking_letters(len(parsed))!r} (one letter per answer), got {ranking!r}")
    return BatchItem(
        id=_as_int(_require(obj, "id"), "id"),
        instruction=_as_str(_require(obj, "instruction"), "instruction"),
        image_path=_as_str(_require(obj, "image_path"), "image_path"),
        original_dataset=_as_str(_require(obj, "original_dataset"), "original_dataset"),
        answers=parsed,
        human_answer=ranking,
        extra=_extra(obj, BATCH_KEYS),
        key_order=order)


def read_jsonl(path: str | os.PathLike, kind: str) -> list[Item]:
    """Reads a release file of one kind ('score', 'pair' or 'batch') into validated items.

    Raises:
      FileNotFoundError: no such file.
      ValueError: bad `kind`.
      JsonlFormatError: the first bad line: not UTF-8, not JSON, not an object, a missing field,
        a field of the wrong type, a human score outside 1-5, a pair verdict outside A/B/C, a batch
        ranking that is not a permutation of its answer positions. The message names the file,
        the 1-based line and the field.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    path = os.fspath(path)
    items: list[Item] = []
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise JsonlFormatError(path, lineno, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise JsonlFormatError(path, lineno, None, f"bad JSON: {e.msg} at column {e.colno}") from None
            try:
                items.append(_item_from_dict(obj, kind))
            except _LineError as e:
                raise JsonlFormatError(path, lineno, e.field, e.message) from None
    return items


# ----------------------------------------------------------------------------------- writing


def _answer_dict(a: Answer) -> dict:
    return {"name": a.name, "answer": a.answer, **a.extra}


def item_to_dict(item: Item) -> dict:
    """An item -> the JSON object of its line (keys in the order it was read, else the release's)."""
    kind = kind_of(item)
    if kind == "score":
        human_key = _HQ_HUMAN_KEY if item.key_order and _HQ_HUMAN_KEY in item.key_order \
            and "human" not in item.key_order else "human"
        known = {k: getattr(item, k) for k in SCORE_KEYS if k != "human"}
        known[human_key] = item.human
        default = SCORE_KEYS[:-1] + (human_key,)
    elif kind == "pair":
        known = {k: getattr(item, k) for k in PAIR_KEYS}
        known["answer1"], known["answer2"] = _answer_dict(item.answer1), _answer_dict(item.answer2)
        default = PAIR_KEYS
    else:
        known = {k: getattr(item, k) for k in BATCH_KEYS}
        known["answers"] = [_answer_dict(a) for a in item.answers]
        default = BATCH_KEYS
    clash = set(known) & set(item.extra)
    if clash:
        raise ValueError(f"{kind} item: extra keys {sorted(clash)} clash with the item's own fields")
    merged = {**known, **item.extra}
    order = [k for k in (item.key_order or ()) if k in merged]
    seen = set(order)
    order += [k for k in (*default, *item.extra) if k not in seen]
    return {k: merged[k] for k in order}


def write_jsonl(items: Sequence[Item], path: str | os.PathLike) -> None:
    """Writes items one JSON object a line (UTF-8, `ensure_ascii=False`, '\\n' after each line)."""
    lines = [json.dumps(item_to_dict(item), ensure_ascii=False) + "\n" for item in items]
    with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as f:
        f.writelines(lines)
