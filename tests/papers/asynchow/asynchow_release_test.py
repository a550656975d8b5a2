"""The AsyncHow release reader: hand-made files in the release's pickle layout, refusal of pickles that
would run code, malformed files, the gold check, the JSON format and the TFDS builder of the splits."""

import copy
import datetime
import os
import pickle
import subprocess

import pytest

from jaxml.papers.asynchow import generator, release
from jaxml.papers.asynchow.plan import Interval, Plan, PlanError, critical_path, parse_duration, release_task_time

td = datetime.timedelta
DAY = 86400


def _hand_release() -> dict:
    """Three tasks in the release's layout, every field written by hand (the release's meanings)."""
    return {
        "titles": ["How to plant a hedge", "How to bake a cake", "How to age a cheese"],
        "steps": [["Order the shrubs.", "Dig the trench.", "Plant the shrubs."],
                  ["Mix the batter.", "Pour it in the tin.", "Bake it.", "Let the butter soften."],
                  ["Make the curd.", "Press it.", "Let it age."]],
        "step_nums": [3, 4, 3],
        "step_deps": [[("1", "3"), ("2", "3")], [("1", "2"), ("2", "3")], {("1", "2"), ("2", "3")}],
        "edge_list": [[("1", "3"), ("2", "3"), ("START", "1"), ("START", "2"), ("3", "END")],
                      [("1", "2"), ("2", "3"), ("START", "1"), ("START", "4"), ("3", "END"), ("4", "END")],
                      [("1", "2"), ("2", "3"), ("START", "1"), ("3", "END")]],
        "adjacency_list": [{"1": ["3"], "2": ["3"], "3": ["END"], "END": [], "START": ["1", "2"]},
                           {"1": ["2"], "2": ["3"], "3": ["END"], "4": ["END"], "END": [], "START": ["1", "4"]},
                           {"1": ["2"], "2": ["3"], "3": ["END"], "END": [], "START": ["1"]}],
        "time_dic": [{"1": "30 days", "2": "1 month", "3": "1 day"},
                     {"1": "5 minutes", "2": "5 minutes", "3": "5 minutes", "4": "2 hours"},
                     {"1": "1 hour", "2": "2 hours", "3": "1 year"}],
        "timedelta_dic": [{"1": [td(days=30), td(days=30)], "2": [td(days=28), td(days=31)],
                           "3": [td(days=1), td(days=1)]},
                          {"1": [td(minutes=5)] * 2, "2": [td(minutes=5)] * 2, "3": [td(minutes=5)] * 2,
                           "4": [td(hours=2)] * 2},
                          {"1": [td(hours=1)] * 2, "2": [td(hours=2)] * 2, "3": [td(days=365), td(days=366)]}],
        # The path with the most nodes: in task 1 it takes 15 minutes, the answer is 2 hours.
        "longest_path_len": [["START", "1", "3", "END"], ["START", "1", "2", "3", "END"],
                             ["START", "1", "2", "3", "END"]],
        "shortest_path_len": [["START", "1", "3", "END"], ["START", "4", "END"], ["START", "1", "2", "3", "END"]],
        "path_count": [2, 2, 1],
        "all_paths": [[["START", "1", "3", "END"], ["START", "2", "3", "END"]],
                      [["START", "1", "2", "3", "END"], ["START", "4", "END"]],
                      [["START", "1", "2", "3", "END"]]],
        "ve_count": [10, 12, 9],
        "plan_types": ["async", "async", "sequential"],
        "all_corr_paths": [[["START", "2", "3", "END"]], [["START", "4", "END"]], [["START", "1", "2", "3", "END"]]],
        # Task 0 by the release's rule: path 1 gives [31, 31] days, then path 2 [29, 32] resets it.
        "task_time": [[td(days=29), td(days=32)], [td(hours=2), td(hours=2)],
                      [td(days=365, hours=3), td(days=366, hours=3)]],
        "nshot_instructions": {"few_shot": "Example ...", "few_shot_cot": "Example, step by step ...",
                               "idxs": [1198, 8, 3]},
    }


HAND_PLANS = [
    Plan("How to plant a hedge", ("Order the shrubs.", "Dig the trench.", "Plant the shrubs."),
         ("30 days", "1 month", "1 day"), ((1, 3), (2, 3))),
    Plan("How to bake a cake", ("Mix the batter.", "Pour it in the tin.", "Bake it.", "Let the butter soften."),
         ("5 minutes", "5 minutes", "5 minutes", "2 hours"), ((1, 2), (2, 3))),
    Plan("How to age a cheese", ("Make the curd.", "Press it.", "Let it age."), ("1 hour", "2 hours", "1 year"),
         ((1, 2), (2, 3))),
]
HAND_GOLDS = [Interval(29 * DAY, 32 * DAY), Interval(7200, 7200), Interval(365 * DAY + 3 * 3600, 366 * DAY + 3 * 3600)]


def _write(path, obj, protocol=4):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    return path


@pytest.fixture
def hand_dir(tmp_path):
    _write(tmp_path / "data" / "async_benchmark.pkl", _hand_release())
    return tmp_path / "data"


def test_hand_written_release_file_loads_to_hand_computed_plans_and_golds(hand_dir):
    rs = release.load_release(hand_dir)
    assert len(rs) == 3 and rs.files == {"async": str(hand_dir / "async_benchmark.pkl")}
    assert rs.plans == HAND_PLANS
    assert [t.gold for t in rs] == HAND_GOLDS
    assert [t.plan_type for t in rs] == ["async", "async", "sequential"]
    assert [(t.index, t.source, t.ve_count) for t in rs] == [(0, "async", 10), (1, "async", 12), (2, "async", 9)]
    assert [t.ve_count for t in rs] == [t.plan.ve_count for t in rs]
    # The month step makes task 0 an interval; our max over paths has the tighter lower end.
    assert critical_path(rs[0].plan) == Interval(31 * DAY, 32 * DAY)
    assert release_task_time(rs[0].plan)[0] == rs[0].gold
    # longest_path_len is the path with the most nodes, not the answer.
    t1 = rs[1]
    longest = sum(parse_duration(t1.plan.durations[int(s) - 1]).hi for s in t1.extra["longest_path_len"][1:-1])
    assert longest == 900 and t1.gold.hi == 7200 == critical_path(t1.plan).hi
    assert t1.extra["timedelta_dic"]["4"] == [td(hours=2)] * 2 and "task_time" not in t1.extra
    assert rs.meta == {"async": {"nshot_instructions": _hand_release()["nshot_instructions"]}}   # idxs not sliced
    assert "nshot_instructions" not in t1.extra


def test_to_release_dict_reproduces_every_hand_written_field(hand_dir):
    rs = release.load_release(hand_dir)
    out = release.to_release_dict(rs, meta=rs.meta["async"])
    hand = _hand_release()
    for field, value in hand.items():
        if field == "step_deps":
            assert [set(x) for x in out[field]] == [set(x) for x in value]
        else:
            assert out[field] == value, field
    assert out["adjacency_matrix"][2] == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0] * 5, [1, 0, 0, 0, 0]]
    assert out["csr"][2] == ([1, 1, 1, 1], [0, 1, 2, 3, 3, 4], [1, 2, 0, 3])


@pytest.mark.parametrize("protocol", [0, 2, 3, 4, 5])
def test_every_pickle_protocol_of_the_release_layout_loads(tmp_path, protocol):
    rs = release.load_release(_write(tmp_path / "async_benchmark.pkl", _hand_release(), protocol))
    assert rs.plans == HAND_PLANS and [t.gold for t in rs] == HAND_GOLDS


def test_file_written_by_to_release_dict_loads_back(tmp_path):
    tasks = release.make_tasks(HAND_PLANS, source="seq", gold_rule="release")
    path = _write(tmp_path / "mine.pkl", release.to_release_dict(tasks))
    with pytest.raises(ValueError, match="kind"):
        release.load_release(path)
    rs = release.load_release(path, kind="seq")
    assert rs.plans == HAND_PLANS and [t.gold for t in rs] == HAND_GOLDS and {t.source for t in rs} == {"seq"}


def test_prompts_are_sliced_per_task_and_put_back(tmp_path):
    plans = generator.generate_plans(3, seed=1, plan_types=("parallel",), text_source="synthetic")
    d = release.to_release_dict(release.make_tasks(plans, "para"))
    prompts = {"T1": {"vanilla_prompts": ["p0", "p1", "p2"], "cot_prompts": ["c0", "c1", "c2"]}}
    d["nshot_instructions"] = {"prompts": prompts, "few_shot": "fs", "idxs": [1198, 8, 3]}
    rs = release.load_release(_write(tmp_path / "para_benchmark.pkl", d))
    assert rs[1].extra["nshot_instructions"] == {"prompts": {"T1": {"vanilla_prompts": "p1", "cot_prompts": "c1"}}}
    assert rs.meta["para"]["nshot_instructions"] == {"few_shot": "fs", "idxs": [1198, 8, 3]}
    assert release.to_release_dict(rs, meta=rs.meta["para"])["nshot_instructions"] == d["nshot_instructions"]


# --- Pickles that would run code ---------------------------------------------------------------------

class _Call:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.mark.parametrize("protocol", [0, 2, 4])
@pytest.mark.parametrize("kind", ["os.system", "subprocess.Popen", "builtins.eval", "getattr"])
def test_pickles_that_run_code_are_refused(tmp_path, kind, protocol):
    target = tmp_path / "pwned"
    cmd = f"echo pwned > {target}"
    payload = {
        "os.system": _Call(os.system, cmd),
        "subprocess.Popen": _Call(subprocess.Popen, ["sh", "-c", cmd]),
        "builtins.eval": _Call(eval, f"__import__('os').system({cmd!r})"),
        "getattr": _Call(getattr, "text", "upper"),
    }[kind]
    data = _hand_release()
    data["titles"][1] = payload   # hidden inside an otherwise valid file
    path = _write(tmp_path / "async_benchmark.pkl", data, protocol)
    name = {"os.system": os.system.__module__ + ".system", "getattr": "builtins.getattr"}.get(kind, kind)
    with pytest.raises(release.UnsafePickleError, match=rf"async_benchmark.pkl.*{name}.*accepted"):
        release.load_release(tmp_path)
    with pytest.raises(ValueError):   # UnsafePickleError is a ValueError
        release.safe_load_pickle(path)
    assert not target.exists()


class Plain:
    pass


def test_plain_objects_and_persistent_ids_are_refused():
    for protocol in (0, 1, 2, 4):
        with pytest.raises(release.UnsafePickleError):
            release.safe_loads(pickle.dumps(Plain(), protocol=protocol))
    with pytest.raises(release.UnsafePickleError, match="persistent"):
        release.safe_loads(b"Pfoo\n.")
    with pytest.raises(ValueError, match="not a readable pickle"):
        release.safe_loads(pickle.dumps({"a": 1})[:-3], "cut.pkl")


# --- Malformed files -------------------------------------------------------------------------------------

def _base():
    plans = generator.generate_plans(4, seed=3, plan_types=("async",), text_source="synthetic")
    return release.to_release_dict(release.make_tasks(plans, "async"))


def _broken(d, field, i, value):
    d = copy.deepcopy(d)
    d[field][i] = value
    return d


def test_malformed_files_name_file_field_and_index(tmp_path):
    base = _base()
    path = tmp_path / "async_benchmark.pkl"
    cases = []
    d = copy.deepcopy(base)
    d["time_dic"] = d["time_dic"][:-1]
    cases.append((d, release.ReleaseFormatError,
                  r"async_benchmark.pkl, field 'time_dic': 3 entries but 'titles' has 4"))
    d = copy.deepcopy(base)
    del d["task_time"]
    cases.append((d, release.ReleaseFormatError, r"async_benchmark.pkl: missing field\(s\) \['task_time'\]"))
    d = _broken(base, "step_deps", 2, base["step_deps"][2] + [("1", "9")])
    cases.append((d, release.ReleaseFormatError, r"async_benchmark.pkl: task 2 .*step_deps.*'9' is out of range"))
    n1 = len(base["steps"][1])
    d = _broken(base, "step_deps", 1, [(str(a), str(a % n1 + 1)) for a in range(1, n1 + 1)])
    d["edge_list"][1] = [("START", "1"), ("1", "END")] + d["step_deps"][1]
    cases.append((d, PlanError, r"async_benchmark.pkl: task 1 .*cycle"))
    d = copy.deepcopy(base)
    del d["edge_list"]
    a, b = d["step_deps"][1][0]
    d["step_deps"][1] = d["step_deps"][1] + [(b, a)]
    cases.append((d, PlanError, r"async_benchmark.pkl: task 1 .*cycle"))
    d = _broken(base, "time_dic", 0, {**base["time_dic"][0], "2": "a little while"})
    cases.append((d, PlanError, r"async_benchmark.pkl: task 0 .*step 2.*cannot parse the duration 'a little while'"))
    d = _broken(base, "time_dic", 3, {k: v for k, v in base["time_dic"][3].items() if k != "1"})
    cases.append((d, release.ReleaseFormatError, r"async_benchmark.pkl: task 3 .*'time_dic'.*missing \['1'\]"))
    d = _broken(base, "edge_list", 0, base["edge_list"][0][1:])
    cases.append((d, ValueError, r"async_benchmark.pkl: task 0"))
    d = _broken(base, "task_time", 2, [td(hours=2), td(hours=1)])
    cases.append((d, release.ReleaseFormatError, r"async_benchmark.pkl: task 2 .*'task_time'"))
    cases.append(([1, 2], release.ReleaseFormatError, r"async_benchmark.pkl: expected a dict"))
    for data, err, pattern in cases:
        _write(path, data)
        with pytest.raises(err, match=pattern):
            release.load_release(path)


# --- The gold check ----------------------------------------------------------------------------------------

def test_check_gold_on_hand_file(hand_dir):
    report = release.check_gold(release.load_release(hand_dir))
    counts = (report["n"], report["hi_agree"], report["lo_agree_release_rule"], report["lo_agree_max_paths"])
    assert counts == (3, 3, 3, 2)
    assert report["lo_max_paths_disagree"] == [("async", 0)] and report["interval_golds"] == 2
    assert report["duration_disagree"] == report["ve_count_disagree"] == report["plan_type_disagree"] == []


def test_check_gold_on_300_generated_plans_with_the_release_rule(tmp_path):
    plans = generator.generate_plans(300, seed=11, text_source="synthetic")
    tasks = release.make_tasks(plans, "async", gold_rule="release")
    rs = release.load_release(_write(tmp_path / "async_benchmark.pkl", release.to_release_dict(tasks)))
    assert rs.plans == plans
    report = release.check_gold(rs)
    assert report["n"] == report["hi_agree"] == report["lo_agree_release_rule"] == 300
    assert report["hi_disagree"] == report["lo_release_rule_disagree"] == report["duration_disagree"] == []
    expected = [("async", i) for i, p in enumerate(plans) if release_task_time(p)[0].lo != critical_path(p).lo]
    assert report["lo_max_paths_disagree"] == expected
    assert report["lo_agree_max_paths"] == 300 - len(expected)


# --- JSON ------------------------------------------------------------------------------------------------

def test_json_round_trip_is_exact(hand_dir, tmp_path):
    rs = release.load_release(hand_dir)
    summary = release.export_json(rs, tmp_path / "a.json")
    assert summary["tasks"] == 3 and summary["dropped"] == []
    back = release.load_json(tmp_path / "a.json")
    for a, b in zip(rs, back, strict=True):
        assert (a.plan, a.plan_type, a.gold, a.ve_count, a.index, a.source) == (
            b.plan, b.plan_type, b.gold, b.ve_count, b.index, b.source)
        assert b.extra == release.to_jsonable(a.extra)
    assert back[0].extra["timedelta_dic"]["2"] == [28 * DAY, 31 * DAY]
    assert back.meta == {"async": {"nshot_instructions": _hand_release()["nshot_instructions"]}}
    release.export_json(back, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    again = release.load_json(tmp_path / "b.json")
    assert again.tasks == back.tasks and again.meta == back.meta
    converted = release.to_jsonable({"s": {("2", "3"), ("1", "2")}, "t": td(minutes=1)})
    assert converted == {"s": [["1", "2"], ["2", "3"]], "t": 60.0}
    with pytest.raises(TypeError, match="not all str"):
        release.to_jsonable({1: "a"})


def test_save_generated_and_load_tasks_dispatch(hand_dir, tmp_path):
    plans = generator.generate_plans(25, seed=5, text_source="synthetic")
    release.save_generated(plans, tmp_path / "gen.json")
    gen = release.load_tasks(tmp_path / "gen.json")
    assert gen.plans == plans and [t.gold for t in gen] == [critical_path(p) for p in plans]
    assert {t.source for t in gen} == {"generated"} and [t.index for t in gen] == list(range(25))
    assert release.load_tasks(hand_dir).plans == HAND_PLANS
    assert release.load_tasks(hand_dir / "async_benchmark.pkl").plans == HAND_PLANS
    (tmp_path / "x.txt").write_text("{}")
    with pytest.raises(ValueError, match="expected a release directory"):
        release.load_tasks(tmp_path / "x.txt")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "jaxml-asynchow", "version": 1, "tasks": [{"index": 0}]}')
    with pytest.raises(release.ReleaseFormatError, match=r"bad.json: task 0: missing"):
        release.load_tasks(bad)
    bad.write_text('{"format": "jaxml-asynchow", "version": 2, "tasks": []}')
    with pytest.raises(release.ReleaseFormatError, match="version 2"):
        release.load_json(bad)


# --- TFDS --------------------------------------------------------------------------------------------------

def _check_split(source, name, num):
    from jaxml.papers.asynchow import tfds_builder
    plans = tfds_builder.plans_from_source(source)
    assert plans == generator.split(name, num)
    for r, p in zip(tfds_builder.records_from_source(source), plans, strict=True):
        gold = critical_path(p)
        assert (r["gold_lo"], r["gold_hi"]) == (gold.lo, gold.hi)
        assert (r["title"], r["plan_type"], r["n_steps"], r["ve_count"]) == (p.title, p.plan_type, p.n, p.ve_count)
        assert r["complexity_bin"] == generator.complexity_bin(p.ve_count)


def test_tfds_builder_builds_small_splits_and_reads_back_the_generator_prefixes(tmp_path):
    from jaxml.papers.asynchow import tfds_builder
    sizes = {"train": 50, "validation": 20, "test": 20}
    b = tfds_builder.AsyncHowPlans(data_dir=str(tmp_path), sizes=sizes)
    b.download_and_prepare()
    assert set(b.info.splits) == set(sizes)
    for name, num in sizes.items():
        _check_split(b.as_data_source(split=name), name, num)
    _check_split(tfds_builder.load_split("test", tmp_path, num=7), "test", 7)
    with pytest.raises(ValueError, match="sizes"):
        tfds_builder.config_for({"dev": 3})
