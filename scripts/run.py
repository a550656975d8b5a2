#!/usr/bin/env python3
"""Runs one registered experiment or training config. The only file in jaxml that defines flags.

    python scripts/run.py --config=jaxml/examples/configs/fashion_mnist_cnn.py:tiny \
        --workdir=/tmp/fmnist [--config.batch_size=64] [--jax_distributed]
    python scripts/run.py --list

A config with an `experiment` key runs that registered experiment `(config, workdir) -> Result`
and prints its metrics; a config with only a `task` key runs `train_and_evaluate`. Interrupted
runs resume from the newest checkpoint in `--workdir`. On a TPU pod slice run the same command on
every host with `--jax_distributed`.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags, logging  # noqa: E402
from ml_collections import config_flags  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file, path.py[:arg].", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for checkpoints, metrics and results.")
_DISTRIBUTED = flags.DEFINE_bool(
    "jax_distributed", False, "Call jax.distributed.initialize() first (multi-host jobs, TPU pods).")
_LIST = flags.DEFINE_bool("list", False, "List the registered experiments and exit.")


def main(argv):
    if not flags.FLAGS["verbosity"].present:  # orbax logs every checkpoint at INFO; -v 0 shows it
        logging.set_verbosity(logging.WARNING)
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    from jaxml.core import compilation_cache, distributed
    config = _CONFIG.value
    compilation_cache.enable()
    distributed.initialize(_DISTRIBUTED.value or bool(config is not None and config.get("jax_distributed", False)))

    from jaxml.core import registry, train
    if _LIST.value:
        for name in registry.list_experiments():
            print(name, registry.config_path(name))
        return
    if config is None or _WORKDIR.value is None:
        raise app.UsageError("--config and --workdir are required (or --list)")
    workdir = pathlib.Path(_WORKDIR.value)
    if config.get("experiment"):
        result = registry.get_experiment(config.experiment)(config, workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        result.save(workdir / "result.json")
        print(json.dumps(result.to_json(), indent=2, default=float))
    elif config.get("task"):
        outcome = train.train_and_evaluate(config, workdir)
        print(json.dumps(outcome.metrics, indent=2))
    else:
        raise app.UsageError("the config names neither an `experiment` nor a `task`")


if __name__ == "__main__":
    app.run(main)
