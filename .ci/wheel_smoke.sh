#!/usr/bin/env bash
# The installed package, as a user gets it: builds the wheel, installs it with its runtime extra
# into a new virtual environment in an unrelated folder, and runs the commands there on copies
# of the bundled examples (no source tree on the path). Each command must exit as expected.
# torch==2.13.0 goes in first so the runtime extra does not pull a CUDA build where the index
# serves one; TORCH_SPEC overrides it (e.g. "torch --index-url https://download.pytorch.org/whl/cpu").
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/inkling-compat-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "+ wheel smoke test in $work"

step() { echo "+ $*"; }

step "$python -m pip wheel --no-deps $repo -w $work/dist"
"$python" -m pip wheel -q --no-deps --disable-pip-version-check "$repo" -w "$work/dist"
wheel=$(ls "$work"/dist/inkling_compat-*.whl)
step "$python -m venv $work/venv"
"$python" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip -q --disable-pip-version-check)
step "pip install ${TORCH_SPEC:-torch==2.13.0}"
# shellcheck disable=SC2086 # TORCH_SPEC is shell words on purpose
"${pip[@]}" install ${TORCH_SPEC:-torch==2.13.0}
step "pip install $(basename "$wheel")[runtime]"
"${pip[@]}" install "$wheel[runtime]"

cp -r "$repo/examples" "$work/examples"
cd "$work"  # an unrelated folder: only the installed package can be imported
cli=("$work/venv/bin/inkling-compat")
failed=0
expect() {  # expect CODE COMMAND...: run it, show its last lines, check its exit status
  local want=$1; shift
  echo "+ ${*/#$work\//} (expect exit $want)"
  set +e; "$@" >"$work/out.txt" 2>&1; local got=$?; set -e
  tail -n 4 "$work/out.txt" | sed 's/^/    /'
  if [ "$got" != "$want" ]; then
    echo "FAILED: exit $got, expected $want" >&2
    cat "$work/out.txt" >&2
    failed=1
  fi
}

expect 0 "$work/venv/bin/python" -c "import inkling_compat.runtime.tp, inkling_compat.kernels, inkling_compat; print(inkling_compat.__file__)"
expect 0 "${cli[@]}" --version
expect 0 "${cli[@]}" check --config examples/serve.yaml --model examples/config.json --adapter examples/adapter_pool.yaml
expect 1 "${cli[@]}" check --config examples/broken/serve.yaml --model examples/config.json --adapter examples/broken/adapter_pool.yaml
# every release's argument table is in the wheel (all but the default one gzipped)
for release in 0.5.16 0.5.22; do
  expect 0 "${cli[@]}" check --sglang-version $release --config examples/serve.yaml --model examples/config.json --adapter examples/adapter_pool.yaml
done
expect 0 "${cli[@]}" explain "sglang serve: error: unrecognized arguments: --stream-output"
expect 0 "${cli[@]}" rules sink-pool-rank-mismatch
expect 0 "${cli[@]}" explain "ValueError: Inkling shared-sink LoRA rank dimensions do not match"
expect 0 "${cli[@]}" run --device cpu --tokens 8 --config examples/serve.yaml --model examples/config.json --adapter examples/adapter_pool.yaml
expect 0 "${cli[@]}" run --tp 2 --device cpu --tokens 8 --config examples/serve.yaml --model examples/config.json --adapter examples/adapter
if [ "$failed" != 0 ]; then
  echo "wheel smoke test failed" >&2
  exit 1
fi
echo "wheel smoke test passed"
