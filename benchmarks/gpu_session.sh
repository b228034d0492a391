#!/usr/bin/env bash
# One device call on the H200: GPU tests (compiled kernels) and the runtime benchmark.
# Run from the repository root with the cp312 wheels of the checker's dependencies in
# .device_wheels/ (pydantic, pydantic-core, annotated-types, typing-inspection,
# typing-extensions, common-expression-language; PyYAML, torch, triton, safetensors,
# hypothesis and pytest are on the machine). Logs and results go to $OUT.
#   usage: bash benchmarks/gpu_session.sh [TEST_SECONDS] [BENCH_SECONDS] [BENCH_ARGS...]
set -u
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
TEST_S=${1:-200}
BENCH_S=${2:-330}
shift 2 2>/dev/null || true
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device_wheels/*.whl || exit 5
# Importable in place: the package maps kernels/, rules/, schemas/ into inkling_compat (pyproject package-dir).
for d in kernels rules schemas; do [ -e "inkling_compat/$d" ] || ln -s "../$d" "inkling_compat/$d"; done
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/gpu.txt"
# 1. smoke: the bundled example through the CLI, compiled
python3 -m inkling_compat.cli run --config examples/serve.yaml --model examples/config.json --adapter examples/adapter_pool.yaml --device cuda --tokens 64 2>&1 | tee "$OUT/run_example.txt"
# 2. benchmark (autotuned), written row by row
INKLING_AUTOTUNE=1 timeout "$BENCH_S" python3 benchmarks/bench_runtime.py --output "$OUT/bench_runtime.json" "$@" > "$OUT/bench.txt" 2>&1
echo "bench exit: $?" >> "$OUT/bench.txt"
tail -14 "$OUT/bench.txt"
# 3. tests (compiled kernels), one file at a time (own time budget, verbose so partial runs show)
for spec in test_kernels_gpu:$((TEST_S * 2 / 5)) test_kernels_sink:$((TEST_S / 5)) test_kernels_ops:$((TEST_S / 5)) test_runtime:$((TEST_S / 5)); do
  f=${spec%%:*}; s=${spec##*:}
  timeout "$s" python3 -m pytest -v -p no:cacheprovider -o addopts="" -rfE --tb=short "tests/$f.py" > "$OUT/pytest_$f.txt" 2>&1
  echo "$f exit $? (budget ${s}s): $(grep -c ' PASSED' "$OUT/pytest_$f.txt") passed, $(grep -c ' FAILED' "$OUT/pytest_$f.txt") failed, $(grep -c ' SKIPPED' "$OUT/pytest_$f.txt") skipped" | tee -a "$OUT/pytest_summary.txt"
  grep -E "^FAILED|^ERROR| passed| failed" "$OUT/pytest_$f.txt" | tail -5
done
