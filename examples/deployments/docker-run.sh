#!/bin/sh
# The example Inkling model with its SQL adapter, started with `docker run`.
# Check it: HF_HUB_CACHE=examples/hf-cache/hub inkling-compat check --launch examples/deployments/docker-run.sh
set -e
MODEL=inkling-compat/inkling-mini
ADAPTER=inkling-compat/inkling-mini-sql-lora
PORT=30000

docker run --gpus all --shm-size 32g --ipc=host \
  -p "$PORT:$PORT" \
  -v "$HOME/.cache/huggingface:/root/.cache/huggingface" \
  -e SGLANG_OPT_LINEARIZED_SHARED_SINK=1 \
  lmsysorg/sglang:v0.5.23 \
  python3 -m sglang.launch_server \
    --model-path "$MODEL" \
    --host 0.0.0.0 --port "$PORT" \
    --enable-lora --lora-backend triton \
    --max-loras-per-batch 4 --max-lora-rank 16 \
    --lora-target-modules gate_up_proj down_proj \
    --experts-shared-outer-loras \
    --lora-paths "sql=$ADAPTER"
