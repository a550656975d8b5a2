import textwrap

import ml_collections
import pytest

from jaxml.core import config as config_lib


def test_parse_arg_flags_and_typed_values():
    arg = config_lib.parse_arg("tiny,seed=3,lr=0.5,name=abc", tiny=False, seed=0, lr=1.0, name="x")
    assert arg.tiny is True
    assert arg.seed == 3 and isinstance(arg.seed, int)
    assert arg.lr == 0.5 and isinstance(arg.lr, float)
    assert arg.name == "abc"


def test_parse_arg_empty_gives_defaults():
    arg = config_lib.parse_arg(None, tiny=False, seed=7)
    assert arg.to_dict() == {"tiny": False, "seed": 7}


@pytest.mark.parametrize("bad, match", [("tin", "unknown key 'tin'"), ("seed=abc", "expected int"),
                                        ("seed", "needs a value"), ("tiny=maybe", "expected a boolean")])
def test_parse_arg_errors_name_the_problem(bad, match):
    with pytest.raises(ValueError, match=match):
        config_lib.parse_arg(bad, tiny=False, seed=0)


def test_scale_of():
    assert config_lib.scale_of(config_lib.parse_arg("tiny", tiny=False, quick=False)) == "tiny"
    assert config_lib.scale_of(config_lib.parse_arg("quick", tiny=False, quick=False)) == "quick"
    assert config_lib.scale_of(config_lib.parse_arg("", tiny=False, quick=False)) == "full"
    with pytest.raises(ValueError, match="not both"):
        config_lib.scale_of(config_lib.parse_arg("tiny,quick", tiny=False, quick=False))


def _config():
    c = ml_collections.ConfigDict()
    c.lr = 0.1
    c.steps = 10
    c.flag = False
    c.sizes = (1, 2)
    c.opt = ml_collections.ConfigDict({"name": "adam", "b1": 0.9})
    return c


def test_overrides_take_the_existing_type():
    c = config_lib.apply_overrides(_config(), ["lr=0.5", "steps=20", "flag=true", "sizes=(3, 4)",
                                               "opt.name=sgd", "--config.opt.b1=0.5"])
    assert (c.lr, c.steps, c.flag, c.sizes, c.opt.name, c.opt.b1) == (0.5, 20, True, (3, 4), "sgd", 0.5)


@pytest.mark.parametrize("bad, match", [("lrr=1", "no key 'lrr'"), ("opt.nme=x", "no key 'opt.nme'"),
                                        ("steps=1.5", "expected int"), ("lr", "expected key.sub=value"),
                                        ("lr.x=1", "is not a config section")])
def test_override_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        config_lib.apply_overrides(_config(), [bad])


def test_locked_config_rejects_new_keys():
    c = config_lib.lock(_config())
    c.lr = 0.2  # values stay assignable
    with pytest.raises(AttributeError):
        c.new_field = 1


def test_load_config_with_arg_and_overrides(tmp_path):
    path = tmp_path / "cfg.py"
    path.write_text(textwrap.dedent("""
        import ml_collections
        from jaxml.core.config import parse_arg
        def get_config(arg=None):
            arg = parse_arg(arg, tiny=False)
            c = ml_collections.ConfigDict()
            c.steps = 2 if arg.tiny else 100
            c.lr = 0.1
            return c
    """))
    assert config_lib.load_config(str(path)).steps == 100
    c = config_lib.load_config(f"{path}:tiny", ["lr=0.3"])
    assert (c.steps, c.lr) == (2, 0.3)
    assert c.is_locked
    with pytest.raises(FileNotFoundError, match="does not exist"):
        config_lib.load_config(str(tmp_path / "missing.py"))


def test_flat_dict():
    assert config_lib.to_flat_dict(_config())["opt.b1"] == 0.9


def test_experiment_config_parses_scale_seed_and_extra_keys():
    c, scale = config_lib.experiment_config("pcm/recovery", "quick,seed=3,trials=7", trials=20)
    assert (scale, c.experiment, c.seed, c.trials) == ("quick", "pcm/recovery", 3, 7)
    c, scale = config_lib.experiment_config("pcm/recovery", None, trials=20)
    assert (scale, c.seed, c.trials) == ("full", 0, 20)
    with pytest.raises(ValueError, match="unknown key 'trails'"):
        config_lib.experiment_config("pcm/recovery", "trails=3", trials=20)
    with pytest.raises(ValueError, match="not both"):
        config_lib.experiment_config("pcm/recovery", "tiny,quick")


def test_by_scale_and_reproduce_config():
    assert [config_lib.by_scale(s, tiny=1, quick=2, full=3) for s in ("tiny", "quick", "full")] == [1, 2, 3]
    with pytest.raises(ValueError, match="accepted"):
        config_lib.by_scale("huge", tiny=1, quick=2, full=3)
    c = config_lib.reproduce_config("lqer", "tiny", tiny=["a"], quick=["a", "b"], full=["a", "b", "c"], conv=True)
    assert (c.experiment, c.scale, c.parts, c.conv) == ("lqer/reproduce", "tiny", ("a",), True)
    assert config_lib.reproduce_config("lqer", None, tiny=["a"], quick=["a", "b"], full=["c"]).parts == ("c",)


def test_training_config_starts_from_the_loop_defaults():
    from jaxml.core import train
    c, scale = train.training_config("examples/fashion_mnist_cnn", "tiny,seed=5")
    assert (scale, c.task, c.experiment, c.seed) == ("tiny", "examples/fashion_mnist_cnn", "examples/fashion_mnist_cnn", 5)
    assert {k: c[k] for k in train.TINY_LOOP} == train.TINY_LOOP
    full, _ = train.training_config("examples/fashion_mnist_cnn", None)
    assert full.batch_size == train.default_config().batch_size and full.num_steps == -1
