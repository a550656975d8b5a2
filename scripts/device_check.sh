#!/usr/bin/env bash
# One prepared device check for a machine with a GPU (or TPU): the kernel tests without interpret
# mode (marker `gpu`), then every kernel benchmark. Prints the numbers that go into BUILD.md.
#   bash scripts/device_check.sh            # from the repository root, after installing jaxml with CUDA jax
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
echo "== devices"; $PY -c "import jax; print(jax.__version__, jax.default_backend(), jax.devices())"
echo "== kernel tests, compiled (not interpret mode)"
$PY -m pytest tests/kernels -m gpu -q -p no:cacheprovider; status=$?
[ "$status" -eq 5 ] && { echo "(no gpu-marked kernel tests yet)"; status=0; }
for bench in scripts/bench_*.py; do
  [ -e "$bench" ] || { echo "(no kernel benchmarks yet)"; break; }
  # bench_pcdeq.py pins one CPU thread against PyTorch on the CPU: not a device benchmark.
  [ "$(basename "$bench")" = "bench_pcdeq.py" ] && continue
  echo "== $bench"; $PY "$bench" || status=1
done
exit $status
