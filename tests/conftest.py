"""Shared fixtures: the sglang oracle (sglang 0.5.23's own lora.py, read from its wheel).

The wheel comes from $INKLING_COMPAT_SGLANG_WHEEL, the cache (~/.cache/inkling-compat/ or
$INKLING_COMPAT_CACHE), or `pip download` into the cache. Without it the oracle tests are
skipped, or fail when INKLING_COMPAT_REQUIRE_ORACLE=1 (CI).
"""

from __future__ import annotations

import gc
import json
import os
import sys

# Bytecode. Where PYTHONDONTWRITEBYTECODE is set (some sandboxes and CI images set it), each
# test process compiled the package from source again and pytest rewrote every test module's
# asserts again (collection: 8.3 s CPU without bytecode, 5.0 s with), and each `python -m
# inkling_compat` a test starts compiled what it imports (0.25-0.29 s CPU a check, 0.15 s with
# bytecode). The tests keep their bytecode under build/pycache instead (PYTHONPYCACHEPREFIX,
# inherited by the pytest-xdist workers and every process a test starts; the source tree gets
# no __pycache__). Python writes each file atomically, so processes share the folder safely.
if os.environ.get("PYTHONDONTWRITEBYTECODE"):
    _PYCACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "pycache")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ.setdefault("PYTHONPYCACHEPREFIX", _PYCACHE)
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False

# Under pytest-xdist, the cores shared out among the workers as OpenMP threads (torch's CPU ops;
# inherited by the processes tests start): on 2 cores, two workers with two OpenMP threads each
# spend CPU on threads that spin while they wait (tests/test_kernels_blas.py and
# test_kernels_ops.py: 50.1 s user CPU with two threads, 30.8 s with one). A single process
# keeps torch's default. Set before anything imports torch.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
if _WORKERS:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

# The cyclic garbage collector, set for a test process: tens of thousands of objects (modules,
# rules, the collected tests) live for the whole run, and the tests (hypothesis above all)
# allocate fast. With Python's default thresholds (700, 10, 10) the collector took 6.0 of 35.7 s
# CPU of test_rule_examples, test_caps, test_bounds, test_formats, test_fixes, test_evaluators
# and test_coverage run together; collecting young objects every 10,000 allocations instead of
# 700, and the objects alive after collection frozen (pytest_collection_finish), 1.6 s. Cycles
# are still collected, later; gc.collect() in a test still collects what the test made.
gc.set_threshold(10_000, 10, 10)

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings

from oracle import sglang_sink, tally

# CI runs on 2 shared cores: hypothesis' timing health checks (generation "too slow", too many
# examples filtered by `assume`) are about the speed of generating data, not about what a test
# checks, and fail at random there. Every test's own @settings still apply on top.
# .ci/run sets INKLING_COMPAT_DERANDOMIZE=1: there every hypothesis test draws the same examples
# on every run (seeded from the test's name), so CI passes or fails with the code, never with the
# draw; a developer's run keeps drawing new examples (and `make fuzz-hostile` many more).
settings.register_profile(
    "inkling-ci", suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    derandomize=os.environ.get("INKLING_COMPAT_DERANDOMIZE") == "1",
)
settings.load_profile("inkling-ci")


@pytest.fixture(scope="session")
def sglang_oracle() -> sglang_sink.SglangSink:
    try:
        oracle = sglang_sink.load()
    except (sglang_sink.WheelUnavailable, OSError, KeyError, ImportError) as exc:
        reason = f"sglang {sglang_sink.SGLANG_VERSION} oracle unavailable: {exc}"
        if os.environ.get("INKLING_COMPAT_REQUIRE_ORACLE") == "1":
            pytest.fail(reason + " (INKLING_COMPAT_REQUIRE_ORACLE=1)", pytrace=False)
        pytest.skip(reason)
    same = oracle.lora_sha256 == sglang_sink.EXPECTED_LORA_SHA256
    tally.META.update(
        {"wheel": oracle.wheel.name, "lora.py sha256": oracle.lora_sha256[:16] + ("" if same else " (NOT the reference file)")}
    )
    return oracle


# Under pytest-xdist each worker counts its own cases: a worker hands its counts to the
# controller when it finishes, and the controller prints (and writes) one table of them all.
WORKER_TALLIES: list[dict] = []


def pytest_sessionfinish(session):
    gc.unfreeze()  # (what collection made is freed at exit as without the freeze: no leak reports)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fidelity_tally"] = json.dumps(tally.to_json())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # noqa: ARG001 - pytest-xdist hook
    counts = getattr(node, "workeroutput", {}).get("fidelity_tally")
    if counts:
        WORKER_TALLIES.append(json.loads(counts))


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest hook
    data = tally.merge_documents([tally.to_json(), *WORKER_TALLIES]) if WORKER_TALLIES else tally.to_json()
    if not data["properties"]:
        return
    text = tally.table(data)
    terminalreporter.write_sep("-", "sglang fidelity")
    terminalreporter.write_line(text)
    path = tally.out_path()
    if path:
        tally.write(path, data)


def pytest_configure(config):
    config.addinivalue_line("markers", "fidelity: differential property against sglang's own code (needs the wheel)")
    config.addinivalue_line("markers", "long: runs for seconds (measured); started before the short tests")


def pytest_collection_finish(session):  # noqa: ARG001 - pytest hook
    """What collection left alive (modules, rules, the tests) stays: the collector skips it."""
    gc.freeze()


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook
    """The tests marked `long` first, the rest in their order. pytest-xdist hands a worker its
    next test when it is done (--maxschedchunk=1 in pyproject.toml), so the long ones are spread
    over the workers from the start and the short ones fill in at the end: no worker runs a long
    test alone while the other has nothing left."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
