"""The AmbigInst-style set: its targets recomputed independently from each input, its balance and
reproducibility, and the official formats' round trip and loaders."""

import json
import re

import pytest

from jaxml.papers.ice import data


def _recompute(example, clarification):
    """The target of `clarification` on `example.input`, parsed from the text alone."""
    text = example.input
    if example.family == "order":
        key = clarification.split("order of ")[1].rstrip(".")
        col = {"size": 1, "weight": 2, "price": 3}[key]
        rows = [r.split(", ") for r in text.splitlines()[1:]]
        value = lambda r: float(re.sub(r"[^0-9.]", "", r[col]))  # noqa: E731
        return ", ".join(r[0] for r in sorted(rows, key=value))
    if example.family == "unit":
        feet = int(re.search(r"(\d+) feet", text).group(1))
        return f"{round(feet * 0.3048, 2):g}" if "in metres" in clarification else f"{round(feet * 30.48, 1):g}"
    if example.family == "first":
        words = text.split(", ")
        return words[0] if "as written" in clarification else sorted(words)[0]
    if example.family == "round":
        x = float(re.search(r"([\d.]+)\.$", text).group(1))
        if "whole number" in clarification:
            return str(int(x + 0.5))
        if "one decimal" in clarification:
            return f"{int(x * 10 + 0.5) / 10:.1f}"
        return str(int(x / 10 + 0.5) * 10)
    raise AssertionError(example.family)


def test_targets_match_each_reading_and_readings_disagree():
    examples = data.ambiguous_instructions(seed=3, per_family=10)
    assert len(examples) == 80 and sum(e.is_ambiguous for e in examples) == 40
    for e in examples:
        for clarification, target in zip(e.clarifications, e.targets):
            assert _recompute(e, clarification) == target, (e, clarification)
        if e.is_ambiguous:
            assert len(e.clarifications) >= 2 and len(set(e.targets)) == len(e.targets), e
        else:
            assert e.clarifications == (e.instruction,)
    assert data.ambiguous_instructions(seed=3, per_family=10) == examples
    assert data.ambiguous_instructions(seed=4, per_family=10) != examples
    with pytest.raises(ValueError, match="unknown families"):
        data.ambiguous_instructions(families=("order", "pun"))


def test_official_ambiginst_round_trip_and_ambigqa_loader(tmp_path):
    examples = data.ambiguous_instructions(seed=0, per_family=2)
    path = tmp_path / "ambiginst.json"
    data.save_ambiginst(examples, path)
    record = json.loads(path.read_text())[0]
    assert set(record) == {"orig_instruction", "gt_clarification", "input", "target", "isambig"}
    loaded = data.load_ambiginst(path)
    assert [(e.instruction, e.clarifications, e.targets, e.is_ambiguous) for e in loaded] == \
        [(e.instruction, e.clarifications, e.targets, e.is_ambiguous) for e in examples]
    qa = [{"question": "who won the world cup", "annotations": [{"type": "multipleQAs", "qaPairs": [
              {"question": "who won the 2014 world cup", "answer": ["Germany"]},
              {"question": "who won the 2018 world cup", "answer": ["France"]}]}]},
          {"question": "capital of france", "annotations": {"type": ["singleAnswer"], "answer": [["Paris"]],
                                                            "qaPairs": [None]}}]
    (tmp_path / "qa.json").write_text(json.dumps(qa))
    a, b = data.load_ambigqa(tmp_path / "qa.json")
    assert a.is_ambiguous and a.targets == ("Germany", "France") and len(a.clarifications) == 2
    assert not b.is_ambiguous and b.targets == ("Paris",)
    (tmp_path / "bad.json").write_text(json.dumps([{"orig_instruction": "x"}]))
    with pytest.raises(ValueError, match=r"record 0 lacks \['gt_clarification', 'input', 'target'\]"):
        data.load_ambiginst(tmp_path / "bad.json")
