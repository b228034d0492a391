"""Hostile inputs: "ok" is a promise, and so is exit 2.

Mutations of the bundled examples (examples/serve.yaml, config.json, adapter/, adapter_pool.yaml,
broken/, a fleet of adapter directories): bytes, type swaps of every field, nesting, sizes,
Unicode, file-system oddities (tests/hostile/cases.py). Every outcome must be a report or an
InputError (exit 2 through the CLI), never an exception, exit 3, a traceback or more than one
stderr line, within CPU_LIMIT_S CPU seconds and MEMORY_LIMIT_MB of memory per case; a fleet
whose adapters are broken still reports per adapter. The cases run in worker processes with an
address-space limit, and a worker that hangs is killed (tests/hostile/runner.py).

INKLING_COMPAT_FUZZ_EXAMPLES (default 2000) sets the number of cases, INKLING_COMPAT_FUZZ_SEED
(default 1) the seed; `make fuzz-hostile` runs 100,000. Failures that are known and not fixed
yet are listed in tests/hostile/known.py; their reproducers run below as xfail(strict=True).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import cases, known, runner

EXAMPLES = int(os.environ.get("INKLING_COMPAT_FUZZ_EXAMPLES", "2000"))
SEED = int(os.environ.get("INKLING_COMPAT_FUZZ_SEED", "1"))
ROOT = Path(__file__).resolve().parent.parent


# The cases run in chunks of CHUNK, one test each, so that pytest-xdist spreads them over its
# workers (one test of all of them would be the suite's longest, run on one worker while the
# other waits); each chunk's cases run in one bounded worker process of their own.
CHUNK = 400
CHUNKS = runner._split(range(EXAMPLES), -(-EXAMPLES // CHUNK))  # (sizes within a few cases of each other)


def _show(failures: list[dict], seed: int = SEED) -> str:
    lines = []
    for f in failures[:8]:
        recipe = json.dumps(cases.recipe(seed, f["i"]), ensure_ascii=True)
        lines.append(f"case {f['i']} [{f.get('sig')}] {f['detail']}\n    at {f.get('where') or '?'}\n    recipe {recipe[:400]}")
    return "\n".join(lines) + (f"\n... and {len(failures) - 8} more" if len(failures) > 8 else "")


@pytest.mark.long
@pytest.mark.parametrize("chunk", CHUNKS, ids=[f"cases-{c.start}-{c.stop - 1}" for c in CHUNKS])
def test_every_outcome_is_a_report_or_an_input_error(chunk):
    """Every case of the chunk ran, and ended in a report or an InputError: no exception, exit 3,
    timeout, memory blow-up or CLI disagreement beyond known.KNOWN. The harness is not vacuous:
    each chunk reaches every family and every kind of outcome (a clean report, a report with
    errors, an input error) in good numbers. A fleet of broken adapters reports per adapter."""
    import time

    t0 = time.perf_counter()
    fuzz = runner.summarize(runner.run_cases(SEED, chunk, jobs=1), time.perf_counter() - t0, SEED, 1)
    n = len(chunk)
    assert fuzz["cases"] == n
    assert not fuzz["unknown_failures"], "\n" + _show(fuzz["unknown_failures"])
    _the_mutations_reach_every_outcome(fuzz, n)
    _a_fleet_of_broken_adapters_reports_per_adapter(fuzz)


def _the_mutations_reach_every_outcome(fuzz: dict, n: int) -> None:
    assert set(fuzz["by_family"]) == set(cases.FAMILIES)
    for family, counts in fuzz["by_family"].items():
        assert sum(counts.values()) >= n // 40, (family, counts)
    kinds = fuzz["kinds"]
    assert kinds.get("ok", 0) + kinds.get("warnings", 0) >= n // 100, kinds
    assert kinds.get("errors", 0) >= n // 5, kinds
    assert kinds.get("input-error", 0) >= n // 5, kinds


def _a_fleet_of_broken_adapters_reports_per_adapter(fuzz: dict) -> None:
    """Mutations inside a fleet's adapter directories never make the fleet an input error (the
    runner counts one as a failure), except where no adapter directory is left at all (exit 2
    "holds no adapter directory", README); and they do end in errors of those adapters."""
    assert not [f for f in fuzz["failures"] if f.get("sig") == "InputError:fleet"], _show([f for f in fuzz["failures"] if f.get("sig") == "InputError:fleet"])
    fleet = fuzz["by_family"]["fleet"]
    assert fleet.get("errors", 0) > sum(fleet.values()) // 4, fleet
    assert fleet.get("input-error", 0) <= sum(fleet.values()) // 100, fleet


@pytest.mark.parametrize("setup", cases.SETUPS)
def test_each_setup_unmutated_is_a_clean_report(setup, tmp_path):
    """The harness's base cases: every setup but `broken` checks ok without a single problem
    (so a mutation that is silently accepted shows), `broken` (examples/broken/) has errors."""
    r = {"seed": 0, "index": 0, "family": "type", "setup": setup, "fleet_size": 3, "muts": []}
    outcome = runner.run_inprocess(cases.materialize(r, tmp_path / "case"))
    assert outcome["kind"] == ("errors" if setup == "broken" else "ok"), outcome


def test_recipes_are_deterministic():
    assert [cases.recipe(SEED, i) for i in range(50)] == [cases.recipe(SEED, i) for i in range(50)]
    assert cases.recipe(1, 7) != cases.recipe(2, 7)


def _sample(count: int) -> list[int]:
    """Case indices for the real command, spread over families and setups, none known to fail."""
    picked, seen = [], set()
    for i in range(5000):
        r = cases.recipe(SEED, i)
        key = (r["family"], r["setup"])
        if key in seen or any(m.get("op") in ("fifo", "devzero") for m in r["muts"]):
            continue  # (a FIFO or /dev/zero case is bounded by the worker, not by this sample's timeout)
        seen.add(key)
        picked.append(i)
        if len(picked) == count:
            break
    return picked


@pytest.mark.parametrize("index", _sample(12))
def test_the_real_command(index, tmp_path):
    """A sample through `python -m inkling_compat check`: exit 0, 1 or 2 as the API says, one
    stderr line at most, no traceback; with --format json one JSON document."""
    r = cases.recipe(SEED, index)
    inv = cases.materialize(r, tmp_path / "case")
    try:
        expected = runner.run_inprocess(inv)
        if expected["kind"] == "failure" and known.match(expected, r):
            pytest.skip(f"known finding {known.match(expected, r)}")
        as_json = index % 2 == 1
        proc = subprocess.run(
            [sys.executable, "-m", "inkling_compat", *cases.cli_argv(inv, as_json)],
            capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=60, cwd=ROOT,
        )
    finally:
        cases.undo_permissions(tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stderr[-500:], expected)
    assert proc.returncode == runner.EXPECTED_CODE[expected["kind"]], (proc.returncode, proc.stderr[-500:], expected)
    assert len(proc.stderr.strip().splitlines()) <= 1, proc.stderr[-2000:]
    if as_json:
        assert "ok" in json.loads(proc.stdout)


def _reproducer_params():
    if not known.KNOWN:  # said as such, rather than pytest's "empty parameter set"
        return [pytest.param(0, 0, id="none-open", marks=pytest.mark.skip(reason="no known hostile-input finding is open (tests/hostile/known.py is empty)"))]
    return [
        pytest.param(entry["seed"], entry["index"], id=entry["id"], marks=pytest.mark.xfail(strict=True, reason=f"{entry['id']} ({entry['area']}): {entry['what']}"))
        for entry in known.KNOWN
    ]


@pytest.mark.parametrize(("seed", "index"), _reproducer_params())
def test_known_finding_reproducer(seed, index):
    """Each known finding's reproducer; xfail(strict=True) until it is fixed (then delete its
    entry in tests/hostile/known.py)."""
    (result,) = runner.run_cases(seed, range(index, index + 1), jobs=1)
    assert result["kind"] != "failure", f"[{result.get('sig')}] {result['detail']} at {result.get('where')}"


def test_known_entries_name_their_reproducer():
    """Each known entry's reproducer is the recipe it says (its family, and one of its `ops`)."""
    for entry in known.KNOWN:
        r = cases.recipe(entry["seed"], entry["index"])
        assert r["family"] == entry["family"], entry["id"]
        assert not entry["ops"] or {m.get("op") for m in r["muts"]} & set(entry["ops"]), entry["id"]


RUN_MUTATIONS = {
    "r-string": {"target": "adapter:adapter_config", "op": "set", "path": ["r"], "value": "sixteen"},
    "r-float": {"target": "adapter:adapter_config", "op": "set", "path": ["r"], "value": 1.5},
    "r-null": {"target": "adapter:adapter_config", "op": "set", "path": ["r"], "value": None},
    "alpha-string": {"target": "adapter:adapter_config", "op": "set", "path": ["lora_alpha"], "value": "two"},
    "r-5000-digits": {"target": "adapter:adapter_config", "op": "set", "path": ["r"], "value": cases.digits(5000)},
    "header-truncated": {"target": "adapter:safetensors", "op": "truncate", "at": 0.5},
    "header-length-huge": {"target": "adapter:safetensors", "op": "st_header_len", "value": 2**63, "rand": 0},
}


@pytest.mark.parametrize("name", sorted(RUN_MUTATIONS))
def test_run_refuses_hostile_adapters(name, tmp_path):
    """`inkling-compat run` checks first: a hostile adapter directory is refused (exit 1) or an
    input error (exit 2) in one stderr line, never exit 3 (`r: "sixteen"` included)."""
    r = {"seed": 0, "index": 0, "family": "type", "setup": "adapter_dir", "muts": [RUN_MUTATIONS[name]]}
    inv = cases.materialize(r, tmp_path / "case")
    argv = ["run", "--config", inv["config"], "--model", inv["model"], "--adapter", inv["adapters"][0], "--device", "cpu", "--tokens", "2"]
    import contextlib
    import io

    from inkling_compat import cli

    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    err.flush()
    text = err.buffer.getvalue().decode("utf-8")
    assert code in (1, 2), (code, text)
    assert len(text.strip().splitlines()) <= 1, text


def _explain_texts(count: int) -> list[str]:
    """Hostile `explain` texts made from the rules' own messages: cut, wrapped, prefixed, case
    changed, repeated, padded, and bytes of no message at all (deterministic)."""
    import random
    import textwrap

    from inkling_compat.engine.rule_load import load_rules

    messages = sorted({c.rule.message.replace("{", "").replace("}", "") for c in load_rules()})
    rng = random.Random(f"explain:{SEED}")
    texts = ["", " \n\t ", "\x00", "\ud800", "\u202e" * 50, "ValueError: " * 5000, "[" * 50_000, "x" * 200_000]
    while len(texts) < count:
        m = rng.choice(messages)
        op = rng.choice(["cut", "wrap", "prefix", "case", "repeat", "pad", "garbage", "traceback", "surrogate"])
        if op == "cut":
            m = m[: rng.randrange(len(m) + 1)]
        elif op == "wrap":
            m = "\n".join(textwrap.wrap(m, rng.choice([1, 5, 40, 80])))
        elif op == "prefix":
            m = rng.choice(["[2026-01-01 12:00:00 TP0] ERROR ", "(Scheduler pid=12) ", "ValueError: " * 3, "Traceback (most recent call last):\n"]) + m
        elif op == "case":
            m = m.upper() if rng.random() < 0.5 else m.swapcase()
        elif op == "repeat":
            m = "\n".join([m] * rng.choice([2, 20, 60]))  # (1,000 repeated lines: see test_explain_many_repeated_lines)
        elif op == "pad":
            m = m.replace(" ", " " + "a" * rng.choice([100, 10_000]) + " ", 2)
        elif op == "garbage":
            m = bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 100, 5000]))).decode("utf-8", "replace")
        elif op == "traceback":
            m = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n' * rng.choice([1, 50]) + "ValueError: " + m
        else:
            m = m[: len(m) // 2] + "\udc80" + m[len(m) // 2 :]
        texts.append(m)
    return texts


def test_explain_on_hostile_text():
    """`inkling-compat explain TEXT`: exit 0 (explained), 1 (no rule matches) or 2 (empty), one
    stderr line at most, output printable as UTF-8, under CPU_LIMIT_S each."""
    import contextlib
    import io
    import time
    from unittest import mock

    from inkling_compat import cli

    slow, bad = [], []
    for n, text in enumerate(_explain_texts(120)):
        out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        t0 = time.process_time()
        # ("--" before a text starting with "-": see test_explain_text_starting_with_dashes; the
        # text "-" itself means "read stdin" (README), so it is given on stdin.)
        stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8", "surrogatepass")), encoding="utf-8") if text == "-" else sys.stdin
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), mock.patch("sys.stdin", stdin):
            code = cli.main(["explain", "--", text] if text.startswith("-") else ["explain", text])
        cpu = time.process_time() - t0
        err.flush()
        stderr = err.buffer.getvalue().decode("utf-8")
        if code not in (0, 1, 2) or len(stderr.strip().splitlines()) > 1 or (code == 2) != (not text.strip()):
            bad.append((n, code, text[:80], stderr[:200]))
        if cpu > runner.CPU_LIMIT_S:
            slow.append((n, round(cpu, 2), text[:80]))
    assert not bad, bad[:5]
    assert not slow, slow[:5]


def _explain(text: str) -> tuple[int, float]:
    import contextlib
    import io
    import time

    from inkling_compat import cli

    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    t0 = time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["explain", text])
    return code, time.process_time() - t0


RSLORA = "LoRA adapter name was trained with rsLoRA (scaling lora_alpha / sqrt(r) = peft) but sglang 0.5.23 scales it by lora_alpha / r = sg: its deltas are factor times too small"


@pytest.mark.parametrize("distinct", [False, True], ids=["same-line", "distinct-lines"])
def test_explain_many_repeated_lines(distinct):
    """A log that repeats one warning per request (1,000 identical lines, ~170 KB, or 500 each
    with its own adapter name) is explained in bounded time (F11: this grew with the square of
    the lines: 400 lines 3 s CPU, 800 lines 10 s; now linear, ~1.4 ms per distinct line)."""
    count = 500 if distinct else 1000
    lines = [RSLORA.replace("adapter name", f"adapter name{i}") if distinct else RSLORA for i in range(count)]
    code, cpu = _explain("\n".join(lines))
    assert code == 0
    assert cpu < runner.CPU_LIMIT_S, f"{cpu:.1f} s CPU"


def test_explain_text_starting_with_dashes():
    """A pasted argparse-rule message starting with '--' is text, not an option (argparse takes
    an argument with a space in it for a positional; a lone word such as '--lo' needs `--`)."""
    code, _ = _explain("--moe-runner-backend triton does not yet support ROCm")
    assert code == 0


@pytest.fixture(scope="module")
def issue_cases() -> dict[int, dict]:
    return {r["i"]: r for r in runner.run_cases(0, range(len(cases.ISSUE_CASES)), jobs=2)}


@pytest.mark.parametrize("index", range(len(cases.ISSUE_CASES)), ids=[c[0] for c in cases.ISSUE_CASES])
def test_each_named_hostile_input(issue_cases, index):
    """Each named hostile input (seed 0 of the recipes: cases.ISSUE_CASES), under the same bounds: a report
    or an input error; in a fleet, errors of that adapter while the others are still checked."""
    result = issue_cases[index]
    assert result["kind"] != "failure", f"[{result.get('sig')}] {result['detail']} at {result.get('where')}"
    name, family, _, _ = cases.ISSUE_CASES[index]
    if family == "fleet":
        assert result["kind"] == "errors", result
