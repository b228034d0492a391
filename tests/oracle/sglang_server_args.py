"""An oracle made of sglang's own LoRA server-argument validation, for differential tests.

Two parts of sglang 0.5.23, read from the wheel at test time (never copied here):

* `sglang/srt/arg_groups/lora_hook.py`, executed whole: `check_lora_server_args` and what it
  calls (`_check_v2_lora_modes`, `check_lora_speculative_compatibility`,
  `check_lora_moe_runner_args`) run for real. Its four imports are stand-ins:
  - `resolving_view` / `declare_resolution` (arg_groups/overrides.py): the stash of declared
    resolutions on the server-args object and a live read view that shows the last
    declaration of a field over its raw value (what overrides.py documents: "a live read
    view of what resolution has decided so far", "last writer wins"); the published-record
    and unknown-field guards of declare_resolution are left out (no record is published here);
  - `envs`: `SGLANG_EXPERIMENTAL_LORA_OPTI`, `SGLANG_RAGGED_VERIFY_MODE`,
    `SGLANG_ENABLE_OVERLAP_PLAN_STREAM`, each with `.get()` returning the case's value;
  - `get_platform()`: an object whose `is_hip` is the case's "device is ROCm";
  - `LoRARef`: a plain record with sglang's `deterministic_id` (uuid5 of name and path);
  and the module's `logger` is replaced after execution by a recorder of `warning` calls.
* `sglang/srt/arg_groups/fields/lora.py`, executed whole with stand-ins for msgspec's `Struct`,
  `A` (= typing.Annotated), `Arg` (records its keywords), `LoRAPathAction`, `LoRARef` and the
  two constants it imports from utils/common.py (read from the wheel's source by `ast`). The
  argparse arguments of its fields that have `choices` are then built with arg_utils.py's own
  `_unwrap_annotated`, `_unwrap_optional` and `_infer_type_func` (read from the wheel) and
  Python's argparse parses the case's flags in the namespace's declaration order. The
  construction of the parser (one `add_argument` per field with choices, `type`, `choices`,
  `nargs`) is ours, not arg_utils' `add_cli_args_from_dataclass`.

The server-args object is a `SimpleNamespace` of inkling_compat's `ServerConfig` defaults (sglang
0.5.23's) updated with the case: an attribute the functions read that is not there raises
AttributeError, so nothing is read from a default we did not state.

`load_release(wheel)` is the same oracle for any supported release: its `check_lora_server_args`
(0.5.16-0.5.18: the ServerArgs method; later: lora_hook.py) and its whole argument parser
(oracle.sglang_argparse), with the release's own parser defaults.
"""

from __future__ import annotations

import argparse
import traceback
import types
import typing
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Annotated, Union, get_args, get_origin

from oracle import wheel_source
from oracle.sglang_sink import find_wheel

LORA_HOOK_PATH = "sglang/srt/arg_groups/lora_hook.py"
LORA_FIELDS_PATH = "sglang/srt/arg_groups/fields/lora.py"
ARG_UTILS_PATH = "sglang/srt/arg_groups/arg_utils.py"
COMMON_PATH = "sglang/srt/utils/common.py"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    error_class: str | None = None
    message: str | None = None
    kind: str | None = None  # "argparse" or "sglang"
    line: int | None = None
    warnings: tuple[str, ...] = ()


# --- stand-ins for lora_hook.py's imports ---------------------------------------------------


class _Context:
    """What the env / platform stand-ins answer during one call."""

    env: dict[str, Any] = {}
    is_hip: bool = False


class _EnvVar:
    def __init__(self, name: str) -> None:
        self.name = name

    def get(self) -> Any:
        return _Context.env[self.name]


class _Envs:
    def __getattr__(self, name: str) -> _EnvVar:
        if name.startswith("SGLANG_"):
            return _EnvVar(name)
        raise AttributeError(name)


class _Platform:
    @property
    def is_hip(self) -> bool:
        return _Context.is_hip


class LoRARef:
    """lora_registry.LoRARef without msgspec: the four fields and deterministic_id."""

    def __init__(self, lora_id: str | None = None, lora_name: str | None = None, lora_path: str | None = None, pinned: bool | None = None):
        if lora_id is None:
            raise ValueError("lora_id cannot be None")
        self.lora_id, self.lora_name, self.lora_path, self.pinned = lora_id, lora_name, lora_path, pinned

    @staticmethod
    def deterministic_id(lora_name: str, lora_path: str) -> str:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"{lora_name}\0{lora_path}").hex


def declare_resolution(server_args: Any, source: str, **fields: Any) -> None:
    stash = getattr(server_args, "_resolved_overrides", None)
    if stash is None:
        stash = []
        server_args._resolved_overrides = stash
    stash.append((source, dict(fields)))


class _ResolvingView:
    """Reads a field's last declared resolution, else its raw value (live: re-read per access)."""

    def __init__(self, server_args: Any) -> None:
        object.__setattr__(self, "_args", server_args)

    def __getattr__(self, name: str) -> Any:
        args = object.__getattribute__(self, "_args")
        for _source, declared in reversed(getattr(args, "_resolved_overrides", None) or ()):
            if name in declared:
                return declared[name]
        return getattr(args, name)


def resolving_view(server_args: Any) -> _ResolvingView:
    return _ResolvingView(server_args)


class _WarningRecorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def warning(self, message: str, *args: Any) -> None:
        self.messages.append(message % args if args else message)

    def info(self, *args: Any, **kwargs: Any) -> None:
        pass

    debug = info


# --- stand-ins for fields/lora.py's imports -------------------------------------------------


class _Struct:
    def __init_subclass__(cls, **kwargs: Any) -> None:  # msgspec.Struct's class keywords
        super().__init_subclass__()


class Arg:
    """arg_utils.Arg: only records its keywords."""

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)
        self.kwargs = kwargs


def _choices_parser(wheel: Path) -> tuple[argparse.ArgumentParser, list[tuple[str, str, bool]]]:
    """An argparse parser with sglang's LoRA arguments that have `choices`: (parser, [(field,
    flag, nargs *)] in declaration order)."""
    common = wheel_source.read(wheel, COMMON_PATH)
    constants: dict[str, Any] = {}
    for name in ("SUPPORTED_LORA_TARGET_MODULES", "LORA_TARGET_ALL_MODULES"):
        exec(wheel_source.top_level(common, name), constants)
    msgspec = {"Struct": _Struct, "field": lambda **kw: None, "NODEFAULT": object()}
    stubs = {
        "msgspec": msgspec,
        "sglang.srt.arg_groups.arg_utils": {"A": Annotated, "Arg": Arg},
        "sglang.srt.arg_groups.argparse_actions": {"LoRAPathAction": argparse.Action},
        "sglang.srt.lora.lora_registry": {"LoRARef": LoRARef},
        "sglang.srt.utils.common": {k: v for k, v in constants.items() if not k.startswith("__")},
    }
    source = wheel_source.read(wheel, LORA_FIELDS_PATH)
    module = wheel_source.exec_module(source, f"{wheel}!/{LORA_FIELDS_PATH}", "sglang.srt.arg_groups.fields.lora", stubs)
    lora = module.Lora
    hints = typing.get_type_hints(lora, globalns=module.__dict__, include_extras=True)
    utils_source = wheel_source.read(wheel, ARG_UTILS_PATH)
    helpers: dict[str, Any] = {"Annotated": Annotated, "Union": Union, "get_origin": get_origin, "get_args": get_args, "types": types, "Arg": Arg, "Literal": typing.Literal}
    for name in ("_unwrap_annotated", "_unwrap_optional", "_infer_type_func"):
        exec(wheel_source.top_level(utils_source, name), helpers)
    parser = argparse.ArgumentParser(prog="sglang.launch_server", exit_on_error=False, add_help=False)
    flags: list[tuple[str, str, bool]] = []
    for name in lora.__annotations__:  # declaration order
        inner, arg = helpers["_unwrap_annotated"](hints[name])
        if arg is None or getattr(arg, "choices", None) is None:
            continue
        base, _optional = helpers["_unwrap_optional"](inner)
        flag = "--" + name.replace("_", "-")
        kwargs: dict[str, Any] = {"type": helpers["_infer_type_func"](base), "choices": arg.choices, "dest": name}
        nargs = getattr(arg, "nargs", None)
        if nargs is not None:
            kwargs["nargs"] = nargs
        parser.add_argument(flag, **kwargs)
        flags.append((name, flag, nargs == "*"))
    return parser, flags


# --- the oracle ----------------------------------------------------------------------------


@dataclass
class SglangServerArgs:
    module: types.ModuleType
    parser: argparse.ArgumentParser
    flags: list[tuple[str, str, bool]]
    origin: str
    wheel: Path
    hook_sha256: str
    defaults: dict[str, Any] = field(default_factory=dict)

    def argv(self, config: dict[str, Any]) -> list[str]:
        """The command line of the case's choice-bearing flags (declaration order)."""
        argv: list[str] = []
        for name, flag, many in self.flags:
            if name not in config or config[name] is None:
                continue
            value = config[name]
            argv.append(flag)
            argv.extend(str(v) for v in (value if many else [value]))
        return argv

    def parse(self, config: dict[str, Any]) -> Outcome:
        try:
            self.parser.parse_args(self.argv(config))
        except argparse.ArgumentError as exc:
            return Outcome(False, "SystemExit", str(exc), "argparse")
        return Outcome(True)

    def check(self, config: dict[str, Any], env: dict[str, Any], rocm: bool) -> Outcome:
        """check_lora_server_args on a namespace of the defaults updated with `config`."""
        args = types.SimpleNamespace(**{**self.defaults, **config})
        _Context.env = env
        _Context.is_hip = rocm
        recorder = _WarningRecorder()
        self.module.logger = recorder
        try:
            self.module.check_lora_server_args(args)
        except Exception as exc:  # noqa: BLE001 - every exception is an outcome
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == self.origin]
            return Outcome(False, type(exc).__name__, str(exc), "sglang", frames[-1].lineno if frames else None, tuple(recorder.messages))
        return Outcome(True, warnings=tuple(recorder.messages))


def load(wheel: Path | None = None) -> SglangServerArgs:
    from inkling_compat.inputs.models import ServerConfig

    wheel = wheel or find_wheel()
    source = wheel_source.read(wheel, LORA_HOOK_PATH)
    origin = f"{wheel}!/{LORA_HOOK_PATH}"
    stubs = {
        "sglang.srt.arg_groups.overrides": {"declare_resolution": declare_resolution, "resolving_view": resolving_view},
        "sglang.srt.environ": {"envs": _Envs()},
        "sglang.srt.lora.lora_registry": {"LoRARef": LoRARef},
        "sglang.srt.runtime_context": {"get_platform": lambda: _Platform()},
    }
    module = wheel_source.exec_module(source, origin, "sglang.srt.arg_groups.lora_hook", stubs)
    parser, flags = _choices_parser(wheel)
    defaults = ServerConfig().model_dump(exclude={"env", "sink"})
    return SglangServerArgs(module, parser, flags, origin, wheel, wheel_source.sha256(source), defaults)


# --- every supported release -----------------------------------------------------------------
#
# Where each release keeps its LoRA server-argument checks (read from its wheel):
#   0.5.16-0.5.18  the method ServerArgs.check_lora_server_args of server_args.py (its own
#                  source, taken out by ast; `self._late_resolution` / `self.override` write in
#                  place, as their own code does)
#   0.5.19-0.5.23  arg_groups/lora_hook.py, executed whole (0.5.19 resolves with
#                  `declare_late_resolution`, which writes in place; later ones declare)
# The argparse side is the release's whole parser (oracle.sglang_argparse), given the case's
# LoRA fields that have choices as flags, in the parser's own order.

SERVER_ARGS_PATH = "sglang/srt/server_args.py"


def _declare_late_resolution(server_args: Any, source: str, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(server_args, name, value)


class _ServerArgsObject(types.SimpleNamespace):
    """The server-args object for 0.5.16-0.5.18's method: its resolution helpers write the
    fields in place (ServerArgs._late_resolution -> declare_late_resolution -> _apply_fields;
    ServerArgs.override's setattr loop)."""

    def _late_resolution(self, source: str, **fields: Any) -> None:
        _declare_late_resolution(self, source, **fields)

    def override(self, source: str, **fields: Any) -> None:
        _declare_late_resolution(self, source, **fields)


@dataclass
class ReleaseServerArgs:
    """One release's `check_lora_server_args` and argument parser, with the interface of
    SglangServerArgs (`parse(config)`, `check(config, env, rocm)`)."""

    release: str
    wheel: Path
    origin: str
    source_sha256: str
    namespace: dict[str, Any]  # where `logger` is looked up when the checks run
    function: Any
    argparse_oracle: Any
    choice_rows: list[dict[str, Any]]
    defaults: dict[str, Any] = field(default_factory=dict)

    def argv(self, config: dict[str, Any]) -> list[str]:
        """The case's flags with choices in the config's order (sglang's merger passes a config
        file's keys in file order)."""
        argv = ["--model-path", "/m"]
        rows = {row["dest"]: row for row in self.choice_rows}
        for dest, value in config.items():
            row = rows.get(dest)
            if row is None or value is None:
                continue
            argv.append(row["options"][0])
            argv.extend(str(v) for v in (value if row["nargs"] in ("*", "+") else [value]))
        return argv

    def parse(self, config: dict[str, Any]) -> Outcome:
        from oracle import sglang_argparse

        verdict, said = sglang_argparse.parse(self.argparse_oracle, self.argv(config))
        return Outcome(True) if verdict == "ok" else Outcome(False, "SystemExit", said, "argparse")

    def check(self, config: dict[str, Any], env: dict[str, Any], rocm: bool) -> Outcome:
        args = _ServerArgsObject(**{**self.defaults, **config})
        _Context.env = env
        _Context.is_hip = rocm
        recorder = _WarningRecorder()
        self.namespace["logger"] = recorder
        try:
            self.function(args)
        except Exception as exc:  # noqa: BLE001 - every exception is an outcome
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == self.origin]
            return Outcome(False, type(exc).__name__, str(exc), "sglang", frames[-1].lineno if frames else None, tuple(recorder.messages))
        return Outcome(True, warnings=tuple(recorder.messages))


_RELEASES: dict[Path, ReleaseServerArgs] = {}


def load_release(wheel: Path) -> ReleaseServerArgs:
    """The release's own checks and parser, loaded once per wheel and process."""
    import linecache
    import zipfile

    from inkling_compat.inputs.models import ServerConfig
    from oracle import sglang_argparse

    wheel = Path(wheel).resolve()
    if wheel in _RELEASES:
        return _RELEASES[wheel]
    release = sglang_argparse.release(wheel)
    with zipfile.ZipFile(wheel) as archive:
        has_hook = LORA_HOOK_PATH in archive.namelist()
    if has_hook:
        source = wheel_source.read(wheel, LORA_HOOK_PATH)
        origin = f"{wheel}!/{LORA_HOOK_PATH}"
        stubs = {
            "sglang.srt.arg_groups.overrides": {
                "declare_resolution": declare_resolution,
                "declare_late_resolution": _declare_late_resolution,
                "resolving_view": resolving_view,
            },
            "sglang.srt.environ": {"envs": _Envs()},
            "sglang.srt.lora.lora_registry": {"LoRARef": LoRARef},
            "sglang.srt.runtime_context": {"get_platform": lambda: _Platform()},
        }
        module = wheel_source.exec_module(source, origin, "sglang.srt.arg_groups.lora_hook", stubs)
        namespace, function, sha = module.__dict__, module.check_lora_server_args, wheel_source.sha256(source)
    else:
        whole = wheel_source.read(wheel, SERVER_ARGS_PATH)
        source = wheel_source.method(whole, "ServerArgs", "check_lora_server_args")
        origin = f"{wheel}!/{SERVER_ARGS_PATH}:ServerArgs.check_lora_server_args"
        linecache.cache[origin] = (len(source), None, source.splitlines(True), origin)
        namespace = {"LoRARef": LoRARef, "__name__": "sglang.srt.server_args"}
        exec(compile(source, origin, "exec"), namespace)
        function, sha = namespace["check_lora_server_args"], wheel_source.sha256(source)
    argparse_oracle = sglang_argparse.load(wheel)
    _verdict, parsed = sglang_argparse.parse(argparse_oracle, ["--model-path", "/m"])
    # the flags with choices a case can set (the LoRA flags the argparse-lora-* rules check, and
    # the server config's other typed fields)
    choice_rows = [sglang_argparse.action_row(a) for a in argparse_oracle.parser._actions if a.choices is not None and ("lora" in a.dest or a.dest in ServerConfig.model_fields)]
    defaults = {**ServerConfig().model_dump(exclude={"env", "sink"}), **parsed}
    loaded = ReleaseServerArgs(release, wheel, origin, sha, namespace, function, argparse_oracle, choice_rows, defaults)
    _RELEASES[wheel] = loaded
    return loaded
