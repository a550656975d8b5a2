"""Ambiguous instructions with ambiguity known by construction (AmbigInst-style), and loaders for the
official AmbigInst and AmbigQA JSON files.

`ambiguous_instructions(seed, per_family)` generates, offline and reproducibly, four families of tasks.
Each has an ambiguous instruction whose answer depends on an unstated choice, with one clarification and
one target per reading, and an unambiguous twin that states the choice (one clarification: itself):

    order    "List the items in ascending order."           by size, by weight or by price?
    unit     "How long is the rope in metric units?"         in metres or in centimetres?
    first    "Which of these comes first: ...?"               in the list as written, or alphabetically?
    round    "Round 12.46."                                  to a whole number, one decimal or the nearest ten?

The official AmbigInst file (`logs/dataset/ambiginst.json` of UCSB-NLP-Chang/llm_uncertainty: fields
`orig_instruction`, `gt_clarification`, `input`, `target`, `isambig`) loads with `load_ambiginst`, and
`save_ambiginst` writes ours in the same format. `load_ambigqa` reads AmbigQA's light format
(`question`, `annotations` with `type` and `qaPairs`); a question is ambiguous iff no annotation is
'singleAnswer' (the reference code's `is_ambig`).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np

FAMILIES = ("order", "unit", "first", "round")

_OBJECTS = ("pen", "book", "laptop", "mouse", "cup", "lamp", "stapler", "notebook", "ruler", "vase", "candle",
            "clock", "scissors", "bottle", "phone", "wallet", "keychain", "glasses", "plate", "spoon")
_WORDS = ("river", "apple", "garden", "yellow", "mountain", "basket", "pencil", "window", "orange", "tiger",
          "castle", "engine", "forest", "harbor", "island", "jacket", "kettle", "lemon", "marble", "needle")


@dataclasses.dataclass(frozen=True)
class AmbigExample:
    """One instruction on one input: its readings (clarifications) and the target under each.

    For an unambiguous example `clarifications == (instruction,)` and `targets` has one entry."""

    instruction: str
    clarifications: tuple[str, ...]
    input: str
    targets: tuple[str, ...]
    is_ambiguous: bool
    family: str = "official"

    def __post_init__(self):
        if not self.clarifications or len(self.clarifications) != len(self.targets):
            raise ValueError(f"need one target per clarification, got {len(self.clarifications)} clarifications "
                             f"and {len(self.targets)} targets for {self.instruction!r}")


def _example(rng, ambiguous, vague: str, template: str, text: str, readings: dict):
    """(instruction, clarifications, input, targets) of one family member: the `vague` instruction with
    `template` filled by each reading, or (unambiguous) `template` filled by one reading drawn at random."""
    if ambiguous:
        return vague, tuple(template.format(r) for r in readings), text, tuple(readings.values())
    r = str(rng.choice(list(readings)))
    instruction = template.format(r)
    return instruction, (instruction,), text, (readings[r],)


def _order(rng, ambiguous):
    while True:
        inst, clar, table, targets = _order_once(rng, ambiguous)
        if not ambiguous or len(set(targets)) == len(targets):     # the readings must disagree
            return inst, clar, table, targets


def _order_once(rng, ambiguous):
    names = [str(n) for n in rng.choice(_OBJECTS, size=5, replace=False)]
    keys = {"size": ("cm", rng.permutation(np.arange(5, 60, 5))[:5]),
            "weight": ("kg", np.round(rng.permutation(np.arange(1, 40))[:5] * 0.05, 2)),
            "price": ("$", rng.permutation(np.arange(1, 90))[:5])}
    rows = [f"{n}, {keys['size'][1][i]}cm, {keys['weight'][1][i]}kg, ${keys['price'][1][i]}" for i, n in enumerate(names)]
    table = "Name, size, weight, price\n" + "\n".join(rows)
    targets = {k: ", ".join(names[j] for j in np.argsort(v)) for k, (_, v) in keys.items()}
    return _example(rng, ambiguous, "List the items in ascending order.", "List the items in ascending order of {}.",
                    table, targets)


def _unit(rng, ambiguous):
    feet = int(rng.integers(2, 40))
    metres = round(feet * 0.3048, 2)
    centimetres = round(feet * 30.48, 1)
    text = f"A rope is {feet} feet long."
    readings = {"metres": f"{metres:g}", "centimetres": f"{centimetres:g}"}
    return _example(rng, ambiguous, "How long is the rope in metric units? Answer with a number only.",
                    "How long is the rope in {}? Answer with a number only.", text, readings)


def _first(rng, ambiguous):
    while True:
        words = [str(w) for w in rng.choice(_WORDS, size=4, replace=False)]
        if words[0] != min(words):
            break
    text = ", ".join(words)
    readings = {"first in the list as written": words[0], "first in alphabetical order": min(words)}
    return _example(rng, ambiguous, "Which of these words comes first?", "Which of these words comes {}?", text,
                    readings)


def _round(rng, ambiguous):
    while True:
        x = round(float(rng.uniform(10, 99)), 2)
        readings = {"to the nearest whole number": f"{round(x):d}", "to one decimal place": f"{round(x, 1):.1f}",
                    "to the nearest ten": f"{int(round(x, -1)):d}"}
        hundredths = round(x * 100) % 10
        if len(set(readings.values())) == 3 and hundredths not in (0, 5):     # no ties, no trailing zero
            break
    text = f"The number is {x:.2f}."
    return _example(rng, ambiguous, "Round the number.", "Round the number {}.", text, readings)


_MAKERS = {"order": _order, "unit": _unit, "first": _first, "round": _round}


def ambiguous_instructions(seed: int = 0, per_family: int = 25, families=FAMILIES) -> list[AmbigExample]:
    """`per_family` ambiguous and `per_family` unambiguous examples of each family, reproducibly from `seed`."""
    unknown = set(families) - set(_MAKERS)
    if unknown:
        raise ValueError(f"unknown families {sorted(unknown)}; accepted: {FAMILIES}")
    if per_family < 1:
        raise ValueError(f"per_family must be >= 1, got {per_family}")
    out = []
    for f_i, family in enumerate(families):
        rng = np.random.default_rng([seed, f_i])
        for i in range(2 * per_family):
            ambiguous = i % 2 == 0
            inst, clar, text, targets = _MAKERS[family](rng, ambiguous)
            out.append(AmbigExample(inst, tuple(clar), text, tuple(targets), ambiguous, family))
    return out


def save_ambiginst(examples, path) -> None:
    """Writes examples in the official AmbigInst JSON format."""
    rows = [dict(orig_instruction=e.instruction, gt_clarification=list(e.clarifications), input=e.input,
                 target=list(e.targets), isambig=e.is_ambiguous) for e in examples]
    pathlib.Path(path).write_text(json.dumps(rows, indent=2))


def load_ambiginst(path) -> list[AmbigExample]:
    """The official AmbigInst JSON (a list of objects with the fields of the module docstring)."""
    rows = json.loads(pathlib.Path(path).read_text())
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON list of AmbigInst records, got {type(rows).__name__}")
    out = []
    for i, r in enumerate(rows):
        missing = {"orig_instruction", "gt_clarification", "input", "target"} - set(r)
        if missing:
            raise ValueError(f"{path}: record {i} lacks {sorted(missing)}")
        out.append(AmbigExample(r["orig_instruction"], tuple(r["gt_clarification"]), r["input"], tuple(r["target"]),
                                bool(r.get("isambig", True))))
    return out


def load_ambigqa(path) -> list[AmbigExample]:
    """AmbigQA light records (JSON list, or JSON lines): `question`, `annotations` as a list of
    {type, answer, qaPairs: [{question, answer}]} or HF's dict of lists. Clarifications are the
    disambiguated questions of the first multipleQAs annotation (the question itself otherwise); targets
    their first answers; ambiguous iff no annotation is 'singleAnswer'."""
    text = pathlib.Path(path).read_text()
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    out = []
    for i, r in enumerate(rows):
        if "question" not in r or "annotations" not in r:
            raise ValueError(f"{path}: record {i} lacks 'question' or 'annotations'")
        ann = r["annotations"]
        if isinstance(ann, dict):                                     # HF: a dict of lists
            ann = [dict(zip(ann, values)) for values in zip(*ann.values())]
        types = [a.get("type") for a in ann]
        ambiguous = "singleAnswer" not in types
        clar, targets = (r["question"],), ("",)
        for a in ann:
            if a.get("type") == "singleAnswer" and a.get("answer"):
                targets = (str(a["answer"][0]),)
                break
        if ambiguous:
            for a in ann:
                pairs = a.get("qaPairs") or []
                if isinstance(pairs, dict):
                    pairs = [dict(zip(pairs, values)) for values in zip(*pairs.values())]
                if pairs:
                    clar = tuple(p["question"] for p in pairs)
                    targets = tuple(str(p["answer"][0]) if isinstance(p["answer"], list) else str(p["answer"])
                                    for p in pairs)
                    break
        out.append(AmbigExample(r["question"], clar, "", targets, ambiguous, "ambigqa"))
    return out
