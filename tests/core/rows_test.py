"""`jaxml.core.experiment.Rows`: rows survive a restart and a line cut by a kill is rerun, not fatal."""

from jaxml.core.experiment import Rows


def test_rows_resume_and_skip_a_cut_line(tmp_path):
    path = tmp_path / "sub" / "rows.jsonl"
    rows = Rows(path)
    assert rows.get("a") is None
    rows.add("a", value=1.5, seed=0)
    rows.add("b", value=[1, 2])
    with path.open("a") as f:
        f.write('{"key": "c", "val')          # a kill in the middle of a write
    again = Rows(path)
    assert again.get("a") == {"key": "a", "value": 1.5, "seed": 0}
    assert again.get("b")["value"] == [1, 2]
    assert again.get("c") is None              # the cut row reruns
    again.add("a", value=2.0)                  # a later row with the same key wins on reload
    assert Rows(path).get("a")["value"] == 2.0
