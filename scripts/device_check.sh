#!/usr/bin/env bash
# One prepared device check for a machine with a GPU (or TPU), at most 8 minutes in one call:
#   1. the kernel tests compiled (pytest marker `gpu`: no interpret mode),
#   2. the three kernel benchmarks (attention-LRP against its XLA path and jax.nn.dot_product_attention,
#      the LQER GEMM against its XLA path, the pcDEQ fixed point against its XLA path),
#   3. one table of all of them (scripts/device_report.py) for BUILD.md.
#
#   bash scripts/device_check.sh              # on the device machine, after `pip install -e .` with CUDA/TPU jax
#   bash scripts/device_check.sh --dry-run    # on a CPU: the same steps at smoke sizes (the kernels in
#                                             # interpret mode, the compiled tests only collected)
# Results go to $OUT (default ./device_check_out): tests.log, bench_*.json, bench_*.log, table.md.
# Exit status: 0 when every step passed, 1 otherwise (a failed step never stops the others).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-device_check_out}
DRY=0
case "${1:-}" in
  --dry-run) DRY=1 ;;
  "") ;;
  *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
status=0
step() {  # step SECONDS NAME COMMAND...: run with a time limit, log to $OUT/NAME.log, record failure
  local limit=$1 name=$2; shift 2
  echo "== $name (limit ${limit}s)"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$OUT/$name.log"
  if [ "$rc" -ne 0 ]; then echo "!! $name failed (exit $rc; 124 = over its time limit)"; status=1; fi
  return 0
}

echo "== devices"
$PY -c "import jax; print(jax.__version__, jax.default_backend(), jax.devices())" || status=1

if [ "$DRY" -eq 1 ]; then
  # The compiled tests cannot run on a CPU: check that they are collected, then run the lowering tests.
  step 120 tests_collect $PY -m pytest tests/kernels -m gpu --collect-only -q -p no:cacheprovider
  grep -qE "[1-9][0-9]* tests? collected|[1-9][0-9]*/[0-9]+ tests collected" "$OUT/tests_collect.log" \
    || { echo "!! no gpu-marked kernel tests collected"; status=1; }
  step 240 tests $PY -m pytest tests/kernels -q -p no:cacheprovider -k "lower or auto"
  ATT=(--lens=128 --batch=1 --heads=2 --kv_heads=1 --head_dim=32 --reps=1 --cpu_interpret)
  LQ=(--rows=16 --shapes=256x256 --rank=16 --reps=1 --cpu_interpret)
  FP=(--cpu_interpret --reps=1)
else
  step 240 tests $PY -m pytest tests/kernels -m gpu -q -p no:cacheprovider
  ATT=(--lens=512,2048,8192 --reps=10)
  LQ=(--rows=1,16,512 --shapes=4096x4096,576x1536 --reps=20)
  FP=(--quick)
fi
step 90 bench_attention_lrp $PY scripts/bench_attention_lrp.py "${ATT[@]}" --out="$OUT/bench_attention_lrp.json"
step 90 bench_lqer_matmul $PY scripts/bench_lqer_matmul.py "${LQ[@]}" --out="$OUT/bench_lqer_matmul.json"
step 60 bench_fixed_point $PY scripts/bench_fixed_point.py "${FP[@]}" --out="$OUT/bench_fixed_point.json"

echo "== table ($OUT/table.md)"
$PY scripts/device_report.py "$OUT"/bench_attention_lrp.json "$OUT"/bench_lqer_matmul.json \
  "$OUT"/bench_fixed_point.json | tee "$OUT/table.md" || status=1
exit $status
