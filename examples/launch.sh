#!/bin/sh
# An sglang 0.5.23 launch of an Inkling model with shared-sink LoRA, as a deployment writes it.
# Check it (from the repository root): inkling-compat check --launch examples/launch.sh
set -e
export SGLANG_OPT_LINEARIZED_SHARED_SINK=1

exec python3 -m sglang.launch_server \
  --model-path examples/model \
  --served-model-name inkling-lora \
  --host 0.0.0.0 \
  --port 30000 \
  --dtype bfloat16 \
  --tp-size 1 \
  --mem-fraction-static 0.85 \
  --context-length 8192 \
  --chunked-prefill-size 4096 \
  --max-running-requests 64 \
  --trust-remote-code \
  --log-level info \
  --enable-lora \
  --lora-backend triton \
  --max-loras-per-batch 4 \
  --max-lora-rank 16 \
  --lora-target-modules gate_up_proj down_proj \
  --experts-shared-outer-loras \
  --lora-paths support=examples/adapter
