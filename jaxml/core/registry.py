"""The experiment registry: experiments and tasks by name `<slug>/<name>`, imported lazily.

A paper package `jaxml/papers/<slug>/` registers its experiments when it is imported:

    @registry.experiment("pcdeq/train")
    def train(config, workdir) -> Result: ...

The lookup `get_experiment("pcdeq/train")` imports `jaxml.papers.pcdeq` on first use, so adding a
paper edits no central table. The shared examples (the Fashion-MNIST baseline) live under the
slug `examples` in `jaxml.examples`. By convention the config of experiment `<slug>/<name>`
is the file `configs/<name>.py` of the same package (`config_path` returns it).
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
import pkgutil
import re
from collections.abc import Callable
from typing import Any

_NAME = re.compile(r"^[a-z][a-z0-9_]*/[a-z][a-z0-9_]*$")

# Slugs that are not papers: the shared end-to-end examples (jaxml/examples).
_BUILTIN_PACKAGES = {"examples": "jaxml.examples"}
_PAPERS_PACKAGE = "jaxml.papers"


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    fn: Callable[..., Any]
    module: str

    @property
    def slug(self) -> str:
        return self.name.split("/")[0]

    @property
    def short_name(self) -> str:
        return self.name.split("/")[1]


_EXPERIMENTS: dict[str, Entry] = {}
_TASKS: dict[str, Entry] = {}


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"registry name {name!r} must look like '<slug>/<name>' (lowercase letters, digits, _)")


def _register(table: dict[str, Entry], kind: str, name: str):
    _check_name(name)

    def decorator(fn):
        existing = table.get(name)
        if existing is not None and (existing.module, existing.fn.__qualname__) != (
                fn.__module__, fn.__qualname__):
            raise ValueError(f"{kind} {name!r} is already registered by {existing.module}")
        table[name] = Entry(name, fn, fn.__module__)
        return fn

    return decorator


def experiment(name: str):
    """Decorator: registers `fn(config, workdir) -> Result` as experiment `name`."""
    return _register(_EXPERIMENTS, "experiment", name)


def task(name: str):
    """Decorator: registers a Task factory `fn(config) -> Task` as task `name`."""
    return _register(_TASKS, "task", name)


def package_of(slug: str) -> str:
    """The import path of the package that owns `slug`."""
    return _BUILTIN_PACKAGES.get(slug, f"{_PAPERS_PACKAGE}.{slug}")


def _import_slug(slug: str) -> None:
    module = package_of(slug)
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name in (module, _PAPERS_PACKAGE):
            raise KeyError(f"no package for slug {slug!r} (looked for {module}); "
                           f"known slugs: {all_slugs()}") from e
        raise


def _lookup(table: dict[str, Entry], kind: str, name: str) -> Entry:
    _check_name(name)
    if name not in table:
        _import_slug(name.split("/")[0])
    if name not in table:
        slug = name.split("/")[0]
        known = sorted(n for n in table if n.startswith(slug + "/"))
        raise KeyError(f"no {kind} named {name!r}; {slug!r} registers {known}")
    return table[name]


def get_experiment(name: str) -> Callable[..., Any]:
    """The experiment function `(config, workdir) -> Result` registered as `name`."""
    return _lookup(_EXPERIMENTS, "experiment", name).fn


def get_task(name: str) -> Callable[..., Any]:
    """The Task factory `(config) -> Task` registered as `name`."""
    return _lookup(_TASKS, "task", name).fn


def paper_slugs() -> list[str]:
    """Slugs of the paper packages present under `jaxml/papers` (not imported)."""
    papers = importlib.import_module(_PAPERS_PACKAGE)
    return sorted(m.name for m in pkgutil.iter_modules(papers.__path__) if m.ispkg and not m.name.startswith("_"))


def all_slugs() -> list[str]:
    return sorted(_BUILTIN_PACKAGES) + paper_slugs()


def list_experiments(slugs: list[str] | None = None) -> list[str]:
    """Imports the given slugs (default: all) and returns their registered experiment names."""
    slugs = all_slugs() if slugs is None else slugs
    for slug in slugs:
        _import_slug(slug)
    return sorted(n for n in _EXPERIMENTS if n.split("/")[0] in slugs)


def config_path(name: str) -> pathlib.Path:
    """The config file of experiment `name`: `<package>/configs/<short name>.py`."""
    entry = _lookup(_EXPERIMENTS, "experiment", name)
    package = importlib.import_module(package_of(entry.slug))
    path = pathlib.Path(package.__file__).parent / "configs" / f"{entry.short_name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"experiment {name!r} has no config file at {path}")
    return path
