"""Config conventions: `get_config(arg)` files, `tiny`/`quick` variants, overrides, locking.

Every experiment is configured by a Python file with a function `get_config(arg=None)` that
returns an `ml_collections.ConfigDict`. The string `arg` selects variants, big_vision style:

    get_config("tiny")             # seconds-long variant used by tests, CI and colabs
    get_config("quick,seed=3")     # `quick` flag set, plus a typed key

`parse_arg` turns that string into a ConfigDict; `load_config("path.py:tiny")` imports the file and
calls its `get_config`; `apply_overrides` applies `key.sub=value` strings (the same syntax as
`--config.key.sub=value` on the command line) with the type of the existing value; `lock` freezes
the set of keys so that a typo in an override is an error rather than a silently ignored field.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import ml_collections

ConfigDict = ml_collections.ConfigDict

SCALES = ("tiny", "quick", "full")


def parse_arg(arg: str | None, *, lazy: bool = False, **spec: Any) -> ConfigDict:
    """Parses `"tiny,seed=3"` into a ConfigDict using `spec` for the accepted keys and defaults.

    A bare word `name` sets the boolean `name=True`; `key=value` is converted to the type of the
    default in `spec`. Unknown keys raise ValueError naming the accepted ones (unless `lazy`).

    Example: `parse_arg("tiny,seed=3", tiny=False, seed=0)` -> `{tiny: True, seed: 3}`.
    """
    result = ConfigDict(dict(spec))
    if not arg:
        return result
    for raw in arg.split(","):
        item = raw.strip()
        if not item:
            continue
        key, has_value, value = item.partition("=")
        key = key.strip()
        if key not in spec and not lazy:
            raise ValueError(
                f"config arg {arg!r}: unknown key {key!r}; accepted keys are {sorted(spec)}")
        if not has_value:
            if key in spec and not isinstance(spec[key], bool):
                raise ValueError(f"config arg {arg!r}: {key!r} needs a value ({key}=...)")
            result[key] = True
            continue
        default = spec.get(key)
        result[key] = _convert(value.strip(), default, where=f"config arg {arg!r}, key {key!r}")
    return result


def scale_of(arg: ConfigDict) -> str:
    """Returns 'tiny', 'quick' or 'full' from a parsed arg with boolean `tiny`/`quick` keys."""
    tiny, quick = bool(arg.get("tiny", False)), bool(arg.get("quick", False))
    if tiny and quick:
        raise ValueError("config arg: choose one of 'tiny' and 'quick', not both")
    return "tiny" if tiny else "quick" if quick else "full"


def experiment_config(experiment: str, arg: str | None, **spec: Any) -> tuple[ConfigDict, str]:
    """The start of every experiment config: `(config, scale)` from an arg like `"quick,seed=3"`.

    The arg takes the flags `tiny` and `quick`, `seed` (default 0) and the keys of `spec` with
    their defaults; the returned ConfigDict holds `experiment`, `seed` and those keys, so a config
    file reads

        def get_config(arg=None):
            c, scale = experiment_config("pcm/recovery", arg)
            c.trials = by_scale(scale, tiny=2, quick=5, full=20)
            return c
    """
    spec = {"seed": 0, **spec}
    parsed = parse_arg(arg, tiny=False, quick=False, **spec)
    c = ConfigDict()
    c.experiment = experiment
    for key in spec:
        c[key] = parsed[key]
    return c, scale_of(parsed)


def by_scale(scale: str, *, tiny: Any, quick: Any, full: Any) -> Any:
    """The value for `scale` ('tiny', 'quick' or 'full')."""
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r}; accepted: {SCALES}")
    return {"tiny": tiny, "quick": quick, "full": full}[scale]


def reproduce_config(slug: str, arg: str | None, *, tiny: Sequence[str], quick: Sequence[str],
                     full: Sequence[str], **spec: Any) -> ConfigDict:
    """The config of `<slug>/reproduce`: `experiment`, `scale` and the `parts` run at that scale
    (each `"<name>"` or `"<name>:<arg>"`, see `jaxml.core.experiment.run_parts`), plus `spec` keys."""
    parsed = parse_arg(arg, tiny=False, quick=False, **spec)
    c = ConfigDict()
    c.experiment = f"{slug}/reproduce"
    c.scale = scale_of(parsed)
    c.parts = tuple(by_scale(c.scale, tiny=tuple(tiny), quick=tuple(quick), full=tuple(full)))
    for key in spec:
        c[key] = parsed[key]
    return c


def _convert(text: str, default: Any, *, where: str) -> Any:
    """Converts `text` to the type of `default` (bool, int, float, str, tuple/list via literal)."""
    if default is None:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
    if isinstance(default, bool):
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{where}: expected a boolean (true/false), got {text!r}")
    if isinstance(default, (int, float, str)):
        try:
            return type(default)(text)
        except ValueError as e:
            raise ValueError(f"{where}: expected {type(default).__name__}, got {text!r}") from e
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"{where}: could not parse {text!r} as a Python literal") from e
    if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)):
        return type(default)(value)
    return value


def load_config(spec: str, overrides: Iterable[str] = ()) -> ConfigDict:
    """Loads `path/to/config.py[:arg]`, applies `key=value` overrides and locks the result.

    Args:
      spec: a config file path, optionally followed by `:arg` (for example `...py:tiny`).
      overrides: strings `a.b=value`, typed from the existing value.
    Returns:
      A locked ConfigDict.
    """
    path, _, arg = spec.partition(":")
    module = _import_file(path)
    if not hasattr(module, "get_config"):
        raise ValueError(f"config file {path!r} defines no get_config(arg) function")
    config = module.get_config(arg or None)
    if not isinstance(config, ml_collections.ConfigDict):
        raise TypeError(f"{path}:get_config returned {type(config).__name__}, expected ConfigDict")
    config = apply_overrides(config, overrides)
    return lock(config)


def _import_file(path: str):
    file = pathlib.Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"config file {path!r} does not exist")
    name = "_jaxml_config_" + "_".join(file.resolve().with_suffix("").parts[-3:])
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def apply_overrides(config: ConfigDict, overrides: Iterable[str]) -> ConfigDict:
    """Applies `a.b=value` overrides; the key must exist and the value takes its type."""
    config = ConfigDict(config.to_dict()) if config.is_locked else config
    for override in overrides:
        key, has_value, value = override.partition("=")
        key = key.strip().removeprefix("--config.").removeprefix("config.")
        if not has_value or not key:
            raise ValueError(f"override {override!r}: expected key.sub=value")
        parent, leaf = _walk(config, key)
        if leaf not in parent:
            raise ValueError(
                f"override {override!r}: no key {key!r} in the config; keys here are {sorted(parent.keys())}")
        parent[leaf] = _convert(value, parent[leaf], where=f"override {override!r}")
    return config


def _walk(config: ConfigDict, dotted: str) -> tuple[ConfigDict, str]:
    parts = dotted.split(".")
    node = config
    for i, part in enumerate(parts[:-1]):
        if part not in node or not isinstance(node[part], ml_collections.ConfigDict):
            raise ValueError(f"override key {dotted!r}: {'.'.join(parts[:i + 1])!r} is not a config section")
        node = node[part]
    return node, parts[-1]


def lock(config: ConfigDict) -> ConfigDict:
    """Locks the key set (values stay assignable): a misspelled field raises instead of adding one."""
    config.lock()
    return config


def to_flat_dict(config: ConfigDict, prefix: str = "") -> dict[str, Any]:
    """Flattens a ConfigDict to `{"a.b": value}` (used for logging hyperparameters)."""
    out = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, ml_collections.ConfigDict):
            out.update(to_flat_dict(value, name + "."))
        else:
            out[name] = value
    return out


def require(config: ConfigDict, keys: Sequence[str], where: str) -> None:
    """Raises ValueError listing the missing dotted keys of `config`."""
    missing = []
    for key in keys:
        node = config
        for part in key.split("."):
            if not isinstance(node, ml_collections.ConfigDict) or part not in node:
                missing.append(key)
                break
            node = node[part]
    if missing:
        raise ValueError(f"{where}: the config lacks {missing}")
