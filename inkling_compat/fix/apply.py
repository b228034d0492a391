"""`apply_fixes`: check -> fix -> re-check, until no fix applies (at most MAX_PASSES passes).

Each pass applies the report's applicable fixes (safe ones; unsafe ones too with `unsafe`)
one at a time to the server config's text (fix/target.py: in place, keeping the user's layout),
and re-checks after each. A fix after which an error appears that the first check had neither
found nor reached is kept only while that error has an allowed fix of its own (the next pass
makes it); an error without one takes the fix back, and one still left when the passes end
takes the config back to the last state without it: a fix never introduces a new error.
A file is written only at the end, by inkling_compat/write_file.py (through a symlink, in place
for a hard link, owner and mode kept; not when it changed since it was read), and only with
`write`; a config read from standard input is never written (the CLI prints it fixed);
`check --diff` shows the same change without writing. A config given as a dict comes back
edited (`FixResult.config`); adapter files are never touched.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any, Callable, Mapping, Sequence

from inkling_compat.fix.diff import unified_diff
from inkling_compat.engine.fixes import Fix
from inkling_compat.errors import InputError
from inkling_compat.fix.target import CannotEdit, Conflict, edit_dict, edit_text, is_json_file

MAX_PASSES = 5


@dataclasses.dataclass(frozen=True)
class FixResult:
    """What `apply_fixes` did. `report`: the check of the config as it ends up (the written
    file; a dict config: the edited dict; with write=False, the file as it is); `fixes`: every
    fix met, `applied` True for the ones made, the rest (unsafe without --unsafe-fixes, not determined by the inputs, refused by
    the editor or taken back) with their `reason`; `before`/`after`: the config's text;
    `diff`: their unified diff; `written`: whether the file was replaced; `config`: the edited
    dict for a dict config (the tokens for a launch command); `passes`: how many checks ran."""

    report: Any
    fixes: tuple[Fix, ...]
    before: str | None
    after: str | None
    diff: str
    written: bool
    config: Any
    passes: int
    # Fixes the editor refused for this file's layout (anchors, flow style, ...): their change
    # as a diff against the file rewritten whole, shown and never applied ("" when none).
    rewrite_diff: str = ""

    @property
    def applied(self) -> tuple[Fix, ...]:
        return tuple(f for f in self.fixes if f.applied)

    @property
    def remaining(self) -> tuple[Fix, ...]:
        return tuple(f for f in self.fixes if not f.applied)


def apply_fixes(
    config: Any,
    adapter: Any = None,
    *,
    model: Any = None,
    platform: Any = None,
    sglang_version: str | None = None,
    unsafe: bool = False,
    write: bool = True,
    max_passes: int = MAX_PASSES,
    run: Callable[[Any], Any] | None = None,
) -> FixResult:
    """Fix the server config `config` (a YAML/JSON path or a dict) for this setup.

    `run(config) -> Report` checks one version of the config (default: `check(config, adapter,
    model=, platform=, sglang_version=)`; the CLI passes one that applies --select/--ignore
    and checks a fleet). With write=False nothing is written (`--diff`)."""
    if run is None:
        from inkling_compat.engine.evaluate import check

        kwargs = {} if sglang_version is None else {"sglang_version": sglang_version}

        def run(source: Any) -> Any:
            return check(source, adapter, model=model, platform=platform, **kwargs)

    if isinstance(config, dict):
        return _fix_dict(config, run, unsafe, max_passes)
    from inkling_compat.inputs import stdin

    path = os.fspath(config)
    first = run(path)  # an unusable file is refused here, as `check` refuses it (exit 2)
    try:
        if stdin.is_stdin(path):  # `--config -`: the document read once; never a file to write
            from inkling_compat.inputs.loading import MAX_INPUT_BYTES

            raw, write = stdin.read_bytes(MAX_INPUT_BYTES), False
        else:
            with open(path, "rb") as handle:
                raw = handle.read()
        original = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        from inkling_compat.errors import InputError

        raise InputError(path, "(file)", f"cannot read it to fix: {getattr(exc, 'strerror', None) or exc}") from None
    return _fix_file(path, original, first, run, unsafe, write, max_passes, raw)


def _fix_dict(config: dict[str, Any], run: Callable[[Any], Any], unsafe: bool, max_passes: int) -> FixResult:
    state = _Loop(run, config, run(config), unsafe)
    current = _drive(state, config, lambda data, fix: edit_dict(data, fix.edits), max_passes)
    return FixResult(state.report, state.all_fixes(), None, None, "", False, current, state.passes)


def apply_fixes_argv(
    tokens: Sequence[str],
    *,
    run: Callable[[tuple[str, ...]], Any],
    arity: Mapping[str, str] | None = None,
    unsafe: bool = False,
    max_passes: int = MAX_PASSES,
) -> FixResult:
    """The loop of `apply_fixes` over a launch command: `run(tokens) -> Report` checks one
    version of the command (the launch-command input's parser, then `check`); `arity` is what
    each flag takes (fix/argv_edit.py). `FixResult.config` is the corrected token tuple, `diff`
    the command before and after (one line each); nothing is written."""
    from inkling_compat.fix.argv_edit import edit_argv

    def edit(current: tuple[str, ...], fix: Fix) -> tuple[str, ...]:
        result = edit_argv(current, fix.edits, arity)
        if result.skipped:
            raise CannotEdit(result.skipped[0][1])
        return result.tokens

    start = tuple(tokens)
    state = _Loop(run, start, run(start), unsafe)
    final = _drive(state, start, edit, max_passes)
    import shlex

    before, after = shlex.join(start), shlex.join(final)
    diff = unified_diff(before + "\n", after + "\n", "launch command")
    return FixResult(state.report, state.all_fixes(), before, after, diff, False, final, state.passes)


def _fix_file(path: str, original: str, first: Any, run: Callable[[Any], Any], unsafe: bool, write: bool, max_passes: int, raw: bytes) -> FixResult:
    from inkling_compat.inputs import stdin

    is_json = is_json_file(path, original)
    layout_refused: list[Fix] = []

    refused_before = None if is_json else _merger_refusals(original)

    def edit(text: str, fix: Fix) -> str:
        try:
            edited = edit_text(text, fix.edits, is_json)
            if refused_before == set() and edited != text:
                # A file sglang's own --config reads as it is stays one it reads: a key its
                # ConfigArgumentMerger refuses (a BooleanOptionalAction flag, --lora-paths) goes
                # on the command line instead.
                refused = _merger_refusals(edited)
                if refused:
                    raise Conflict(f"not machine-applicable in sglang's --config file: {sorted(refused)[0]}; give that flag on the command line")
            return edited
        except Conflict:
            raise
        except CannotEdit as exc:
            layout_refused.append(fix)
            raise CannotEdit(f"not applied: {exc}; --diff shows the change as a rewritten file") from None

    with tempfile.TemporaryDirectory(prefix="inkling-compat-fix-") as folder:
        # The scratch copy keeps the file's name (its suffix says JSON or YAML); a name too
        # long for the scratch folder, or standard input, gets a short one.
        name = os.path.basename(path)
        if stdin.is_stdin(path) or len(os.fsencode(name)) > 200:
            name = "config.json" if is_json else "config.yaml"
        scratch = os.path.join(folder, name)

        def check_text(text: str) -> Any:
            if text == original:
                return first
            with open(scratch, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            try:
                return run(scratch)
            except InputError as exc:  # the edited text does not load: the fix is not made
                reason = exc.reason if exc.file == scratch else str(exc).replace(scratch, path)
                raise CannotEdit(f"not applied: the fixed file would not load ({exc.field}: {reason})") from None

        state = _Loop(check_text, original, first, unsafe, label=path, line_of=_line)
        text = _drive(state, original, edit, max_passes)
        written = False
        if write and text != original:
            from inkling_compat.write_file import write_text

            write_text(path, text, "--fix", expected=raw)  # not over an edit made while fixing
            written = True
            report = run(path)  # the real file, as the user's next check will read it
        elif stdin.is_stdin(path) and text != original:  # the fixed document, checked as standard input
            stdin.reset(text.encode("utf-8"))
            report = run(path)
        else:  # nothing written: the report is the file's as it is (the edited text was a scratch copy)
            report = state.first
    rewritten = _rewritten(text, layout_refused, is_json)
    rewrite_diff = unified_diff(text, rewritten, path) if rewritten is not None else ""
    return FixResult(report, state.all_fixes(), original, text, unified_diff(original, text, path), written, None, state.passes, rewrite_diff)


def _drive(state: "_Loop", start: Any, edit: Callable[[Any, Fix], Any], max_passes: int) -> Any:
    """The passes: each tries the current report's fixes one at a time (`edit` makes one on the
    config, raising CannotEdit where it cannot). A pass that changes nothing but refused a fix
    is followed by another (the refused one is not tried again); at most `max_passes` passes
    change the config. Ends on the last config without an error of the fixes' making."""
    current, changing, seen = start, 0, [start]
    while changing < max_passes:
        todo = state.todo()
        if not todo:
            break
        changed = refused = False
        for fix in todo:
            try:
                candidate = edit(current, fix)
            except CannotEdit as exc:
                state.refuse(fix, str(exc))
                refused = True
                continue
            if candidate == current or candidate in seen:
                continue
            try:
                accepted = state.accept(fix, current, candidate)
            except CannotEdit as exc:
                state.refuse(fix, str(exc))
                refused = True
                continue
            if accepted:
                seen.append(candidate)
                current, changed = candidate, True
            else:
                refused = True
        changing += changed
        if not changed and not refused:
            break
    return state.settle(current)


class _Loop:
    """The fixes of successive checks: which were applied, which refused and why.

    A fix after which an error appears that the first check had neither found nor reached is
    kept only while every such error has a fix of its own that may be applied (a target module
    added turns the sink's LoRA on, whose backend then needs its own safe fix); if the passes
    end with one left, the config goes back to the last state without one (`settle`)."""

    def __init__(self, run: Callable[[Any], Any], start: Any, first: Any, unsafe: bool, label: str | None = None, line_of: Callable[[Any, str], int | None] | None = None):
        self.run, self.unsafe, self.label, self.line_of = run, unsafe, label, line_of
        self.first = self.report = first
        self.passes = 1
        self.hidden = _not_reached(self.first)
        self.known = _errors(self.first)
        self.applied: list[Fix] = []
        self.refused: dict[tuple[str, str | None], Fix] = {}
        self.clean = (start, first, 0)  # the last config without an error of the fixes' making

    def allowed(self, fix: Fix) -> bool:
        return fix.applicable and (fix.safety == "safe" or self.unsafe) and (fix.rule_id, fix.adapter) not in self.refused

    def todo(self) -> list[Fix]:
        """This report's fixes to try: applicable, allowed, not refused before, one per key."""
        out, keys = [], set()
        for fix in self.report.fixes():
            if not self.allowed(fix):
                continue
            touched = {e.key for e in fix.edits}
            if touched & keys:
                continue  # another fix of this pass edits the same key: the next pass decides
            keys |= touched
            out.append(fix)
        return out

    def _new(self, report: Any) -> set[tuple[str, str | None]]:
        return _errors(report) - self.known - self.hidden

    def accept(self, fix: Fix, before: Any, candidate: Any) -> bool:
        """Re-check with `candidate`; keep it unless an error appears (not there or hidden in the
        first check) that no allowed fix of the new report addresses."""
        report = self.run(candidate)
        self.passes += 1
        new = self._new(report)
        fixable = {(f.rule_id, f.adapter) for f in report.fixes() if self.allowed(f)}
        if new - fixable:
            self.refuse(fix, f"taken back: after it, {sorted(new - fixable)[0][0]} would fire")
            return False
        line = None
        if self.line_of is not None:
            line = self.line_of(before, fix.edits[0].key) or self.line_of(candidate, fix.edits[0].key)
        self.applied.append(dataclasses.replace(fix, applied=True, file=self.label or fix.file, line=line if self.line_of else fix.line))
        self.report = report
        if not new:
            self.clean = (candidate, report, len(self.applied))
        return True

    def settle(self, current: Any) -> Any:
        """`current`, or the last clean config if `current` still has an error of the fixes' making."""
        new = self._new(self.report)
        if not new:
            return current
        config, report, count = self.clean
        why = f"taken back: after it, {sorted(new)[0][0]} would fire"
        for fix in self.applied[count:]:
            self.refused[(fix.rule_id, fix.adapter)] = dataclasses.replace(fix, applied=False, applicable=False, reason=why)
        del self.applied[count:]
        self.report = report
        return config

    def refuse(self, fix: Fix, reason: str) -> None:
        self.refused[(fix.rule_id, fix.adapter)] = dataclasses.replace(fix, applicable=False, reason=reason, file=self.label or fix.file)

    def all_fixes(self) -> tuple[Fix, ...]:
        """Applied, then refused, then what the last report still offers (not applied)."""
        done = {(f.rule_id, f.adapter) for f in self.applied} | set(self.refused)
        left = []
        for fix in self.report.fixes():
            if (fix.rule_id, fix.adapter) in done:
                continue
            if fix.applicable and fix.safety == "unsafe" and not self.unsafe:
                fix = dataclasses.replace(fix, reason="unsafe: applied only with --unsafe-fixes")
            elif fix.applicable:
                fix = dataclasses.replace(fix, reason=f"not applied within {MAX_PASSES} passes: run --fix again")
            left.append(dataclasses.replace(fix, file=self.label or fix.file) if self.label else fix)
        return tuple(self.applied) + tuple(self.refused.values()) + tuple(left)


def _rewritten(text: str, fixes: list[Fix], is_json: bool) -> str | None:
    """`text` rewritten whole with the edits of `fixes` made (comments and layout are lost:
    shown as a diff only, never written); None when there are none or it does not parse."""
    if not fixes:
        return None
    import json

    import yaml

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    before = data
    for fix in fixes:
        try:
            data = edit_dict(data, fix.edits)
        except CannotEdit:
            continue
    if data == before:
        return None
    if is_json:
        return json.dumps(data, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def _merger_refusals(text: str) -> set[str] | None:
    """The messages sglang's ConfigArgumentMerger refuses this YAML's top-level keys with
    ("Unsupported config option ..."); None when the text is not a mapping it could read."""
    import yaml

    from inkling_compat.inputs.yaml_read import load_yaml
    from inkling_compat.inputs.sglang_config import ConfigRefused, config_to_args

    try:
        data, _ = load_yaml(text, 64)  # the loader's caps: no alias bomb is expanded here
    except (yaml.YAMLError, RecursionError, ValueError, InputError):
        return None
    if not isinstance(data, dict):
        return None
    out = set()
    for key, value in data.items():
        try:
            config_to_args({key: value})
        except ConfigRefused as exc:
            out.add(str(exc))
        except (TypeError, ValueError, AttributeError, RecursionError):
            return None
    return out


def _errors(report: Any) -> set[tuple[str, str | None]]:
    return {(p.rule_id, p.adapter) for p in report.errors}


def _not_reached(report: Any) -> set[tuple[str, str | None]]:
    """Rules the check did not reach (an earlier rule stops sglang first): a fix of that earlier
    rule may reveal them, which is not a new error of the fix's making."""
    hidden: set[tuple[str, str | None]] = set()
    for reason, ids in report.coverage.reasons.items():
        if reason.startswith("not reached"):
            hidden |= {(rule_id, name) for rule_id in ids for name in [None, *(a["name"] for a in report.adapters)]}
    return hidden


def _line(text: Any, key: str) -> int | None:
    from inkling_compat.inputs.config_keys import find_node
    from inkling_compat.inputs.yaml_read import compose

    try:
        found = find_node(compose(text), key)
    except Exception:  # noqa: BLE001 - a line is a courtesy
        return None
    return None if found is None else found[0].start_mark.line + 1
