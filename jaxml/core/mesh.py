"""Device mesh and shardings for the training loop.

The mesh has a `data` axis (the batch is split over it) and a `model` axis (parameters may be
split over it by regex rules). `config.mesh = {"data": -1, "model": 1}` by default: -1 fills the
remaining devices. Parameters are replicated unless a rule in `config.param_sharding` names an
axis: a list of `(regex over the "/"-joined parameter path, partition spec tuple)`, first match
wins, for example `[("mlp/.*kernel", (None, "model"))]`.

Models may instead annotate their parameters with logical axis names (`flax.linen.
with_logical_partitioning`, e.g. `jaxml.nn.layers.Linear(kernel_axes=("embed", "mlp"))`);
`logical_sharding_rules` turns those annotations into the same `(regex, spec)` rules through a
logical-to-mesh table (`LOGICAL_AXIS_RULES`: heads and MLP units over `model`, the embedding
replicated, as in Megatron-style tensor parallelism).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

DATA, MODEL = "data", "model"


def make_mesh(data: int = -1, model: int = 1, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A `(data, model)` mesh over `devices` (default: all devices of all processes).

    Args:
      data: size of the data axis, or -1 for "all devices left after `model`".
      model: size of the model axis.
      devices: the devices to use; their count must equal `data * model`.
    """
    devices = list(jax.devices() if devices is None else devices)
    n = len(devices)
    if model < 1 or n % model:
        raise ValueError(f"mesh: model={model} must be >= 1 and divide the {n} devices")
    if data == -1:
        data = n // model
    if data * model != n:
        raise ValueError(f"mesh: data={data} x model={model} != {n} devices; use data=-1 to fill")
    return jax.make_mesh((data, model), (DATA, MODEL), axis_types=(AxisType.Auto, AxisType.Auto),
                         devices=devices)


def mesh_from_config(mesh_config: Any, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """`make_mesh` from a config section with `data` and `model` (both optional)."""
    get = mesh_config.get if hasattr(mesh_config, "get") else (lambda k, d: d)
    return make_mesh(int(get("data", -1)), int(get("model", 1)), devices)


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Leading (batch) axis split over `data`, the rest replicated."""
    return NamedSharding(mesh, P(DATA))


def path_name(path) -> str:
    """"params/Dense_0/kernel" for a pytree key path."""
    parts = []
    for key in path:
        for attr in ("key", "name", "idx"):
            if hasattr(key, attr):
                parts.append(str(getattr(key, attr)))
                break
        else:
            parts.append(str(key))
    return "/".join(parts)


def param_shardings(abstract_tree: Any, mesh: Mesh,
                    rules: Sequence[tuple[str, Sequence[str | None]]] = ()) -> Any:
    """NamedShardings for a tree of ShapeDtypeStructs, from `(regex, spec)` rules (default: replicate).

    Raises ValueError when a rule names a dimension that the mesh axis size does not divide.
    """
    compiled = [(re.compile(pattern), tuple(spec)) for pattern, spec in rules]

    def one(path, leaf):
        name = path_name(path)
        shape = getattr(leaf, "shape", ())
        for pattern, spec in compiled:
            if pattern.search(name):
                if len(spec) > len(shape):
                    raise ValueError(f"param_sharding: spec {spec} for {name!r} has more axes than its shape {shape}")
                for dim, axis in zip(shape, spec):
                    if axis is not None and dim % mesh.shape[axis]:
                        raise ValueError(
                            f"param_sharding: {name!r} dim {dim} is not divisible by mesh axis "
                            f"{axis!r} of size {mesh.shape[axis]}")
                return NamedSharding(mesh, P(*spec))
        return NamedSharding(mesh, P())

    return jax.tree_util.tree_map_with_path(one, abstract_tree)


# Logical axis -> mesh axis (None = replicated). Tensor parallelism: the qkv and MLP-in kernels split
# their outputs, attention-out and MLP-out kernels their inputs, over `model`.
LOGICAL_AXIS_RULES: tuple[tuple[str, str | None], ...] = (("embed", None), ("heads", MODEL), ("mlp", MODEL))


def logical_sharding_rules(boxed_params: Any, axis_rules: Sequence[tuple[str, str | None]] = LOGICAL_AXIS_RULES
                           ) -> tuple[tuple[str, tuple[str | None, ...]], ...]:
    """`(regex, spec)` rules for `param_shardings` from a params tree with logical annotations.

    Args:
      boxed_params: params (or `jax.eval_shape` of them) as a model's `init` returns them, with
        `flax.linen.LogicallyPartitioned` leaves where the model annotated logical axes.
      axis_rules: `(logical name, mesh axis or None)` pairs; a name missing from them is an error.
    Returns:
      One rule per annotated parameter that maps to a mesh axis; the regex matches the path's end
      (`(^|/)block_0/attn/qkv/kernel$`), so it also catches the optimizer's moments of that parameter.
    """
    import flax.linen as nn

    known = {name for name, _ in axis_rules}
    rules = []

    def one(path, leaf):
        if not isinstance(leaf, nn.LogicallyPartitioned):
            return
        missing = [a for a in leaf.names if a is not None and a not in known]
        if missing:
            raise ValueError(f"logical_sharding_rules: {path_name(path)!r} uses logical axes {missing} that "
                             f"axis_rules do not map; mapped: {sorted(known)}")
        spec = tuple(nn.logical_to_mesh_axes(leaf.names, tuple(axis_rules)))
        if any(a is not None for a in spec):
            rules.append((f"(^|/){re.escape(path_name(path))}$", spec))

    jax.tree_util.tree_map_with_path(one, boxed_params,
                                     is_leaf=lambda x: isinstance(x, nn.LogicallyPartitioned))
    return tuple(rules)


def check_batch_divisible(batch_size: int, mesh: Mesh, what: str = "batch_size") -> None:
    n = mesh.shape[DATA]
    if batch_size % n:
        raise ValueError(f"{what}={batch_size} must be divisible by the data axis size {n} "
                         f"(devices: {mesh.devices.size}); accepted: multiples of {n}")


def global_batch(local_batch: dict[str, np.ndarray], mesh: Mesh) -> dict[str, jax.Array]:
    """Assembles a global, `data`-sharded array from this process's slice of the batch."""
    sharding = batch_sharding(mesh)
    nproc = jax.process_count()

    def one(x):
        x = np.asarray(x)
        global_shape = (x.shape[0] * nproc,) + x.shape[1:]
        return jax.make_array_from_process_local_data(sharding, x, global_shape)

    return jax.tree_util.tree_map(one, local_batch)


def process_slice(global_size: int) -> slice:
    """This process's contiguous slice of a global batch of `global_size` rows."""
    nproc, index = jax.process_count(), jax.process_index()
    if global_size % nproc:
        raise ValueError(f"global batch {global_size} must be divisible by process count {nproc}")
    per = global_size // nproc
    return slice(index * per, (index + 1) * per)


def num_params(tree: Any) -> int:
    return int(sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(tree)))
