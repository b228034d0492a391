"""`inkling-compat explain`: most specific rule first, stdin, tracebacks and log excerpts,
prefixes, wrapping, case, and empty input (exit 2)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from in_process import run_main
from inkling_compat import cli
from inkling_compat.engine.rule_load import load_rules
from inkling_compat.explain import (
    candidates,
    explain_matches,
    findings,
    instrumented,
    literal_score,
    records,
)

NOT_4D = "Inkling shared-sink LoRA requires four 4D MoE buffers"
RANK = "Inkling shared-sink LoRA rank dimensions do not match"
EXPERTS = "Inkling shared-sink LoRA expert count does not match"
MULTISLOT = "InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense LoRA requires the Triton backend"


def run_process(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inkling_compat.cli", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def run_cli(capsys):
    """`inkling-compat ARGS` in this process (tests/in_process.py)."""
    return lambda *args, **kw: run_main(capsys, *args, **kw)


def best(text: str) -> str:
    return explain_matches(text)[0].rule.id


# --- the most specific match first ----------------------------------------------------------


@pytest.mark.parametrize(
    "text,rule_id",
    [(NOT_4D, "sink-pool-not-4d"), (RANK, "sink-pool-rank-mismatch"), (EXPERTS, "sink-pool-expert-count")],
)
def test_own_rule_before_the_rebind_rule_that_shares_its_text(text, rule_id):
    ids = [m.rule.id for m in explain_matches(f"ValueError: {text}")]
    assert ids[0] == rule_id, ids
    assert "sink-pool-rebind-invalid" in ids[1:]  # still listed, after


def test_literal_characters_matched_decide():
    assert literal_score(r"index -?\d+ is out of bounds", "index 12 is out of bounds") == len("index  is out of bounds")
    # Only the alternative that matched counts.
    assert literal_score(r"a long literal alternative|short", "xx short xx") == len("short")
    assert literal_score(r"foo (?:.*; )?bar", "foo x; bar") == len("foo ") + len("; ") + len("bar")
    assert literal_score(r"foo (?:.*; )?bar", "foo bar") == len("foo bar")
    assert literal_score("absent", "nothing here") is None


def test_a_generic_torch_pattern_ranks_below_a_specific_one():
    """"index 2 is out of bounds ..." matches the bind-crash rules (one alternative among
    many) and the V2 slot rule (its whole pattern): the ranking is by what matched, then by
    the shorter pattern."""
    ids = [m.rule.id for m in explain_matches("IndexError: index 5 is out of bounds for dimension 0 with size 4")]
    assert ids[0] == "sink-v2-slot-out-of-range", ids


def test_every_rule_pattern_is_rewritten_faithfully():
    """The literal-counting rewrite of each pattern matches exactly what the pattern matches
    (on each firing example's message, and on that message cut short)."""
    for c in load_rules():
        patterns = [c.rule.message_pattern] + [v.message_pattern for v in c.rule.variants if v.message_pattern]
        for pattern in patterns:
            rewritten = instrumented(pattern)
            assert rewritten is not None, (c.rule.id, pattern)
            for example in c.rule.examples.fire:
                if example.message is None:
                    continue
                for text in (example.message, example.message[: len(example.message) // 2]):
                    plain = re.search(pattern, text, re.IGNORECASE)
                    ours = rewritten.search(text)
                    assert (plain is None) == (ours is None), (c.rule.id, pattern, text)
                    if plain:
                        assert ours.span() == plain.span(), (c.rule.id, text)


# --- one message: prefixes, wrapping, case ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"ValueError: {MULTISLOT}",
        f"[2026-01-01 12:00:00 TP0] Scheduler hit an exception: Traceback ... ValueError: {MULTISLOT}",
        f"2026-01-01 12:00:00,123 ERROR sglang.srt.managers.scheduler: ValueError: {MULTISLOT}",
        f"(Scheduler pid=4242) [2026-01-01 12:00:00 DP0 TP1] ValueError: {MULTISLOT}",
        f"ERROR: {MULTISLOT}",
        MULTISLOT.upper(),
        MULTISLOT.lower(),
        f"ValueError: {MULTISLOT[:40]}\n{MULTISLOT[40:]}",  # wrapped inside a word
        "ValueError: InklingBatchDenseMLPWithLoRA is ineligible: multi-slot dense\nLoRA requires the Triton backend",
        "ValueError: InklingBatchDenseMLPWithLoRA is ineligible:   multi-slot\n   dense LoRA requires\tthe Triton backend",
    ],
)
def test_prefixes_wrapping_and_case_are_tolerated(text):
    found = findings(text)
    assert [f.matches[0].rule.id for f in found] == ["sink-lora-multislot-needs-triton"], found


def test_wrapped_line_starting_with_a_bracket_or_paren_continues_the_message():
    lines = records("ValueError: not enough values to unpack\n(expected 4, got 3)\n[slots, 1 or 2]")
    assert len(lines) == 1 and lines[0][1] == ["ValueError: not enough values to unpack", "(expected 4, got 3)", "[slots, 1 or 2]"]
    assert "not enough values to unpack (expected 4, got 3) [slots, 1 or 2]" in candidates(lines[0][1])


# --- tracebacks and log excerpts ------------------------------------------------------------

LOG = f"""\
[2026-01-01 12:00:00 TP0] Load weight begin.
[2026-01-01 12:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2890, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)
  File "/sgl/python/sglang/srt/models/inkling_common/lora.py", line 81, in set_lora_info
    raise ValueError("{RANK}")
ValueError: Inkling shared-sink LoRA rank dimensions
do not match

[2026-01-01 12:00:01 TP1] Scheduler hit an exception: Traceback (most recent call last):
ValueError: {RANK}
2026-01-01 12:00:02,123 ERROR  launcher: ValueError: {MULTISLOT[:50]}
{MULTISLOT[50:]}
[2026-01-01 12:00:03] Received sigquit from a child process. It usually means the child failed.
"""


def test_each_error_of_a_log_is_explained_once_in_order():
    found = findings(LOG)
    assert [(f.line, f.matches[0].rule.id) for f in found] == [(7, "sink-pool-rank-mismatch"), (12, "sink-lora-multislot-needs-triton")]


def test_traceback_source_lines_are_not_errors():
    """A frame's source line (`raise ValueError("...")`) is code, not the error line."""
    only_frame = 'Traceback (most recent call last):\n  File "lora.py", line 81, in set_lora_info\n    raise ValueError("' + RANK + '")\n'
    assert findings(only_frame) == []


def test_explain_stdin_log_in_subprocess():
    result = run_process("explain", "-", stdin=LOG)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("2 errors in the text")
    assert out.count("sink-pool-rank-mismatch: ") == 1 and out.count("sink-lora-multislot-needs-triton: ") == 1
    assert out.index("sink-pool-rank-mismatch: ") < out.index("sink-lora-multislot-needs-triton: ")
    assert "line 7: ValueError: Inkling shared-sink LoRA rank dimensions do not match" in out
    assert result.stderr == ""


def test_explain_stdin_single_message(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(f"ValueError: {NOT_4D}\n".encode())))
    assert cli.main(["explain", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sink-pool-not-4d: ")
    assert "line " not in out.splitlines()[2]  # one line of text: the block as for an argument


def test_unrelated_log_exits_1(run_cli):
    result = run_cli("explain", "-", stdin="[2026-01-01 12:00:00 TP0] Load weight begin.\nCUDA out of memory.\n")
    assert result.returncode == 1 and "no rule matches" in result.stdout


# --- empty input ----------------------------------------------------------------------------


@pytest.mark.parametrize("argument,stdin", [("", None), ("   \n\t ", None), ("-", ""), ("-", " \n \n")])
def test_empty_text_exits_2_with_one_line(argument, stdin, run_cli):
    result = run_cli("explain", argument, stdin=stdin)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "empty" in lines[0] and "Traceback" not in result.stderr
    assert ("(stdin)" if argument == "-" else "(argument)") in lines[0]


def test_a_long_log_is_read_in_bounded_time():
    """Most lines of a real log match no rule; they are skipped by one search over the rules'
    literals (linear in the log's size, not lines x rules x patterns)."""
    import time

    noise = "".join(f"[2026-01-01 12:00:{i % 60:02d} TP0] Decode batch. #running-req: 3, #token: {i}, gen throughput (token/s): 100.0\n" for i in range(10_000))
    start = time.perf_counter()
    found = findings(noise + LOG + noise)
    assert [f.matches[0].rule.id for f in found] == ["sink-pool-rank-mismatch", "sink-lora-multislot-needs-triton"]
    assert time.perf_counter() - start < 30  # ~1.5 s on a loaded 2-core machine


def test_text_over_the_limit_exits_2(run_cli):
    from inkling_compat.explain import MAX_TEXT_BYTES

    result = run_cli("explain", "-", stdin="x" * (MAX_TEXT_BYTES + 1))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "(stdin)" in result.stderr


@pytest.mark.parametrize(
    "tail, shown",
    [
        ("IndexError: index 5 is out of bounds for dimension 0 with size 4", "  IndexError, raised at"),
        ("boom", "  the class torch raises (it depends on the input), raised at"),
    ],
)
def test_a_derived_class_is_the_one_the_text_names_never_a_template(capsys, tail, shown):
    """Rules whose class is derived from the input (error_class "{cls}") print the class the
    pasted text names, or say that it depends on the input: never the literal "{cls}"."""
    code = cli.main(["explain", f"shared-sink LoRA set_lora_info accepted the pool but fails building the sink's operands: {tail}"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("sink-pool-bind-crash:")
    assert "{cls}" not in out and shown in out
