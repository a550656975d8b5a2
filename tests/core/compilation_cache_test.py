"""The scripts' persistent XLA cache: where it goes, that a second process reads it, how to turn it off."""

import os
import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import json, sys, time
    import jax, jax.numpy as jnp
    from jaxml.core import compilation_cache
    folder = compilation_cache.enable(min_compile_seconds=0.0)
    f = jax.jit(lambda x: jnp.sin(x) @ jnp.cos(x).T + 1.5)
    f(jnp.ones((64, 64))).block_until_ready()
    print(json.dumps({"folder": str(folder) if folder else None}))
""")


def _run(env_extra, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_") and k != "XLA_FLAGS"}
    env.update(JAXML_CACHE=str(tmp_path / "cache"), **env_extra)
    proc = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_cache_lives_under_jaxml_cache_and_is_reused(tmp_path):
    folder = tmp_path / "cache" / "xla"
    assert _run({}, tmp_path) == f'{{"folder": "{folder}"}}'
    written = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert any(name.startswith("jit__lambda") for name in written), written
    _run({}, tmp_path)   # the same program in a second process: read back, not compiled and written again
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == written


def test_cache_can_be_turned_off_or_redirected(tmp_path):
    assert _run({"JAXML_XLA_CACHE": "0"}, tmp_path) == '{"folder": null}'
    assert not (tmp_path / "cache" / "xla").exists()
    own = tmp_path / "own"
    assert _run({"JAX_COMPILATION_CACHE_DIR": str(own)}, tmp_path) == f'{{"folder": "{own}"}}'
    assert any(own.iterdir())
