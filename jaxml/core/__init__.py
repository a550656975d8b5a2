"""Paper-agnostic core: configs, the experiment registry, the one training loop, mesh, checkpoints."""

from jaxml.core.experiment import Result
from jaxml.core.task import Task

__all__ = ["Result", "Task"]
