#!/usr/bin/env bash
# Device calls on the H200: GPU tests, the per-kernel profile (before/after), the per-op benchmarks
# and the runtime benchmark, each stage with its own time budget. Run from the repository root with
# the cp312 wheels of the checker's dependencies in .device_wheels/ (carry it; pydantic,
# pydantic-core, annotated-types, typing-inspection, typing-extensions, common-expression-language;
# PyYAML, torch, triton, safetensors, hypothesis and pytest are on the machine). For the "before"
# profile carry .before/ too (a copy of an older kernels/ as package kernels_before). Logs to $OUT.
#   usage: bash benchmarks/gpu_session.sh STAGE:SECONDS ...   (stages run in the order given)
#   stages: smoke, test_kernels_gpu, test_kernels_sink, test_kernels_ops, test_kernels_fused, test_runtime,
#           test_runtime_plan, profile (after; and before when .before/ exists), ops, bench, bench_perexpert, bench_all,
#           peer (../shared/bench/sglang_peer.py as it is, copied into build/peer/ and carried), plan
#           (benchmarks/bench_plan.py, beside the peer run's sglang prepare_lora_batch timings), host
#           (benchmarks/ops/host_cost.py: the eager forward's host cost and a cProfile of it), epilogue
#           (benchmarks/ops/epilogue_vs_sglang.py: the graph base forward's launches beside sglang's SwiGLU,
#           and our epilogue at the tiles in EPILOGUE_TILES, default 32x64x8,64x64x8,32x128x1,64x128x1,32x64x1)
#   BENCH_COMMIT=<sha> names the commit in the benchmark JSON.
set -u
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device_wheels/*.whl || exit 5
# Importable in place: the package maps kernels/, rules/, schemas/ into inkling_compat (pyproject package-dir).
for d in kernels rules schemas; do [ -e "inkling_compat/$d" ] || ln -s "../$d" "inkling_compat/$d"; done
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv > "$OUT/gpu.txt"
python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())" >> "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
for spec in "$@"; do
  stage=${spec%%:*}; s=${spec##*:}
  t0=$(date +%s)
  case $stage in
    smoke)
      timeout "$s" python3 -m inkling_compat.cli run --config examples/serve.yaml --model examples/config.json \
        --adapter examples/adapter_pool.yaml --device cuda --tokens 64 > "$OUT/run_example.txt" 2>&1
      echo "smoke exit $?" | tee -a "$OUT/summary.txt" ;;
    test_*)
      timeout "$s" python3 -m pytest -v -p no:cacheprovider -o addopts="" -rfE --tb=short "tests/$stage.py" > "$OUT/pytest_$stage.txt" 2>&1
      echo "$stage exit $? (budget ${s}s): $(grep -c ' PASSED' "$OUT/pytest_$stage.txt") passed, $(grep -c ' FAILED' "$OUT/pytest_$stage.txt") failed, $(grep -c ' SKIPPED' "$OUT/pytest_$stage.txt") skipped" | tee -a "$OUT/summary.txt"
      grep -E "^FAILED|^ERROR" "$OUT/pytest_$stage.txt" | head -8 ;;
    profile)
      { timeout "$s" python3 benchmarks/ops/profile_runtime.py --output "$OUT/profile_after.json"
        [ -d .before ] && timeout "$s" python3 benchmarks/ops/profile_runtime.py --path .before --package kernels_before --output "$OUT/profile_before.json"
      } > "$OUT/profile.txt" 2>&1
      echo "profile exit $?" | tee -a "$OUT/summary.txt"; cat "$OUT/profile.txt" | grep -v Warning | tail -14 ;;
    ops)
      for op in routing lora_shrink gate_up_swiglu down_proj; do
        timeout $((s / 4)) python3 "benchmarks/ops/$op.py" --tokens 1,64,4096 > "$OUT/ops_$op.txt" 2>&1
        echo "ops $op exit $?" >> "$OUT/summary.txt"
      done
      cat "$OUT"/ops_*.txt | grep -E "^\|" | grep -v -- "---" ;;
    bench|bench_perexpert|bench_all)
      layout=shared-interleaved; [ "$stage" = bench_perexpert ] && layout=perexpert-contiguous
      [ "$stage" = bench_all ] && layout=shared-interleaved,perexpert-contiguous
      INKLING_AUTOTUNE=1 timeout "$s" python3 benchmarks/bench_runtime.py --layouts "$layout" --commit "${BENCH_COMMIT:-}" \
        --output "$OUT/$stage.json" > "$OUT/$stage.txt" 2>&1
      echo "$stage exit $?" | tee -a "$OUT/summary.txt"; grep -E "^\||ceilings|Error|error" "$OUT/$stage.txt" | tail -14 ;;
    peer)
      timeout "$s" python3 build/peer/sglang_peer.py --commit "${BENCH_COMMIT:-}" --budget-s $((s * 7 / 10)) \
        --output "$OUT/sglang_peer.json" > "$OUT/sglang_peer.txt" 2>&1
      echo "peer exit $?" | tee -a "$OUT/summary.txt"; grep -v Warning "$OUT/sglang_peer.txt" | grep -E "^\||prepare|wrote" | tail -50 ;;
    host)
      timeout "$s" python3 benchmarks/ops/host_cost.py --output "$OUT/host_cost.json" > "$OUT/host.txt" 2>&1
      echo "host exit $?" | tee -a "$OUT/summary.txt"; grep -v Warning "$OUT/host.txt" | head -40 ;;
    epilogue)
      timeout "$s" python3 benchmarks/ops/epilogue_vs_sglang.py --epilogue-tiles "${EPILOGUE_TILES:-32x64x8,64x64x8,32x128x1,64x128x1,32x64x1}" \
        --output "$OUT/epilogue_vs_sglang.json" > "$OUT/epilogue.txt" 2>&1
      echo "epilogue exit $?" | tee -a "$OUT/summary.txt"; grep -v Warning "$OUT/epilogue.txt" | tail -14 ;;
    plan)
      timeout "$s" python3 benchmarks/bench_plan.py --commit "${BENCH_COMMIT:-}" --peer "$OUT/sglang_peer.json" \
        --output "$OUT/runtime_plan.json" > "$OUT/plan.txt" 2>&1
      echo "plan exit $?" | tee -a "$OUT/summary.txt"; cat "$OUT/plan.txt" | grep -v Warning | tail -10 ;;
    *) echo "unknown stage $stage" ;;
  esac
  echo "  ($stage took $(( $(date +%s) - t0 ))s)"
done
