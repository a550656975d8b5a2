"""Orbax checkpointing of the train state, with resume from the newest checkpoint."""

from __future__ import annotations

import pathlib
from typing import Any

import jax
import orbax.checkpoint as ocp


class Checkpointer:
    """A thin wrapper over `orbax.checkpoint.CheckpointManager` for one pytree (the train state).

    Checkpoints live in `workdir/checkpoints/<step>`; orbax writes each to a temporary directory
    and renames it when complete, so a run killed mid-save leaves the previous checkpoint usable.
    """

    def __init__(self, workdir: str | pathlib.Path, every_steps: int, keep: int = 2,
                 async_save: bool = True):
        if every_steps <= 0:
            raise ValueError(f"checkpoint_every_steps={every_steps} must be positive")
        self.directory = pathlib.Path(workdir).absolute() / "checkpoints"
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, save_interval_steps=every_steps, create=True,
            enable_async_checkpointing=async_save, cleanup_tmp_directories=True)
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def restore(self, abstract_state: Any, step: int | None = None) -> Any:
        """Restores `step` (default newest) into the shapes, dtypes and shardings of `abstract_state`."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        try:
            return self.manager.restore(step, args=ocp.args.StandardRestore(abstract_state))
        except Exception as e:  # orbax raises many types for truncated or mismatched files
            raise ValueError(
                f"could not restore checkpoint step {step} from {self.directory}: {e}. If the "
                "model or optimizer changed since it was written, use a fresh workdir.") from e

    def save(self, step: int, state: Any, force: bool = False) -> bool:
        return self.manager.save(step, args=ocp.args.StandardSave(state), force=force)

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def abstract_with_shardings(tree: Any, shardings: Any) -> Any:
    """ShapeDtypeStructs carrying the given shardings (what `restore` needs)."""
    return jax.tree_util.tree_map(
        lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tree, shardings)
