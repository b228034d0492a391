"""sglang 0.5.23's own argument parser and config-file merger, imported from the wheel.

`load(wheel)` imports `sglang.srt.server_args` straight out of the wheel (a zip on sys.path)
and builds the parser as `prepare_server_args` does (server_args.py l.668:
`argparse.ArgumentParser(prog="sglang serve")`, `ServerArgs.add_cli_args(parser)`); it also
imports `sglang.srt.utils.server_args_config_parser.ConfigArgumentMerger`. Nothing of sglang's
argument code is replaced.

What is stood in, and why it cannot change the table:

* the packages `sglang/__init__.py` and `sglang.srt` are empty package objects whose path is
  the wheel's folder: sglang's own `__init__` applies Hugging Face patches and imports its
  runtime, none of which registers an argument;
* third-party packages that are not installed (torch extensions, zmq, orjson, PIL, psutil, ...)
  are answered by a meta-path finder with a module whose every attribute is an inert object.
  The finder never answers for `sglang.*`, the standard library, or a module any other finder
  can import. The argument fields are declared in sglang/srt/arg_groups/fields/*.py with their
  types, choices and defaults as literals or sglang constants; the stood-in packages are
  imported by runtime modules that server_args.py also imports (network, hardware backends),
  whose values no `add_argument` reads. `stood_in` lists every name the finder answered for;
* `orjson`, the one stood-in package whose function a type converter calls at parse time
  (`json_list_type`), is `json` (`orjson.loads` parses the same JSON; `orjson.JSONDecodeError`
  is a `json.JSONDecodeError`);
* SGLANG_* environment variables are removed while the parser is built, so env-dependent
  choices (`--sampling-backend`'s token_oracle) are what the wheel gives with default env.

sglang's modules and the stand-ins are removed from sys.modules afterwards (the parser keeps
what it references), so other oracles that execute sglang files under their own names, and the
next release's load, are unaffected.

Releases 0.5.16-0.5.23 all load this way (with `msgspec` and `dill` installed: their argument
definitions are msgspec Structs, and 0.5.16-0.5.18 pickle a logit processor with dill at import);
classes derived from a stood-in class get `_InertBase` (class keywords such as a TypedDict's
`total=False`, pydantic fields typed with 0.5.19/0.5.20's stood-in openai types).

`python -m oracle.sglang_argparse --wheel PATH [--out FILE]` (from tests/) writes the argument
table the checker ships (inkling_compat/data/sglang-0.5.23-arguments.json).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import io
import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "inkling_compat" / "data"
TABLE_PATH = DATA / "sglang-0.5.23-arguments.json"


class _InertBase:
    """The base a class gets in place of a stood-in one: takes any class keywords (a
    TypedDict's `total=False`) and any constructor arguments."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()


class _Inert:
    """Every attribute, call, item and iteration of a stood-in package: inert."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> "_Inert":
        return _Inert(self._name + "()")

    def __getattr__(self, name: str) -> "_Inert":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self._name}.{name}")

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (_InertBase,)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        # a pydantic field typed with a stood-in class (0.5.19's openai types): any value
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __or__(self, other: Any) -> "_Inert":
        return self

    __ror__ = __or__

    def __getitem__(self, key: Any) -> "_Inert":
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class _InertModule(types.ModuleType):
    __path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")


# Stood in even where installed: sglang's config classes (0.5.16-0.5.18 import them from
# server_args.py) apply huggingface_hub's `strict` to subclasses of transformers'
# PretrainedConfig, which is stood in, and `strict` refuses a class that is not a dataclass.
# No argument reads it.
_ALWAYS_STOOD_IN = frozenset({"huggingface_hub"})


class _MissingOnly(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers for a third-party module no other finder can import (and _ALWAYS_STOOD_IN)."""

    def __init__(self) -> None:
        self.stood_in: set[str] = set()

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        top = name.split(".")[0]
        if top == "sglang" or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        if top in _ALWAYS_STOOD_IN:
            self.stood_in.add(name)
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        for finder in sys.meta_path:
            if finder is self:
                continue
            try:
                if finder.find_spec(name, path, target) is not None:
                    return None
            except Exception:  # noqa: BLE001 - a finder that fails does not find it
                continue
        self.stood_in.add(name)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        return _InertModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@dataclass
class SglangArgparse:
    parser: argparse.ArgumentParser
    merger_class: type
    stood_in: tuple[str, ...]
    wheel: Path
    server_args_module: Any = field(repr=False, default=None)

    def merger(self) -> Any:
        return self.merger_class(self.parser)


def parse(oracle: SglangArgparse, argv: list[str]) -> tuple[str, Any]:
    """The words as the release's `sglang serve` parses them: ("ok", the namespace as a dict) or
    ("refused", sglang's text). A `--config` file is merged first by the release's own
    ConfigArgumentMerger. argparse's message is the last stderr line after `sglang serve:
    error: `; the merger's ValueError is its text; an action's AssertionError (LoRAPathAction)
    reads as its traceback ends."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            if "--config" in argv:
                argv = oracle.merger().merge_config_with_args(argv)
            namespace = oracle.parser.parse_args(argv)
    except SystemExit:
        return "refused", err.getvalue().strip().splitlines()[-1].split("sglang serve: error: ", 1)[1]
    except ValueError as exc:
        return "refused", str(exc)
    except AssertionError as exc:
        return "refused", f"AssertionError: {exc}"
    return "ok", vars(namespace)


_LOADED: dict[Path, SglangArgparse] = {}


def _merger_module(wheel: Path) -> str:
    """ConfigArgumentMerger's module: sglang/srt/utils/ from 0.5.19, sglang/srt/ before."""
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    new = "sglang.srt.utils.server_args_config_parser"
    return new if new.replace(".", "/") + ".py" in names else "sglang.srt.server_args_config_parser"


def load(wheel: Path | None = None) -> SglangArgparse:
    from oracle.sglang_sink import find_wheel

    wheel = Path(wheel or find_wheel()).resolve()
    if wheel in _LOADED:
        return _LOADED[wheel]
    before = set(sys.modules)
    saved_env = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("SGLANG_")}
    # (asked before the stand-in finder is on sys.meta_path: it would answer for orjson)
    real_orjson = "orjson" in sys.modules or importlib.util.find_spec("orjson") is not None
    finder = _MissingOnly()
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] in _ALWAYS_STOOD_IN}
    sys.path.insert(0, str(wheel))
    sys.meta_path.insert(0, finder)
    orjson = types.ModuleType("orjson")
    orjson.loads = json.loads  # type: ignore[attr-defined]
    orjson.dumps = lambda value, *a, **k: json.dumps(value).encode()  # type: ignore[attr-defined]
    orjson.JSONDecodeError = json.JSONDecodeError  # type: ignore[attr-defined]
    if not real_orjson:
        sys.modules["orjson"] = orjson
    for package in ("sglang", "sglang.srt"):
        module = types.ModuleType(package)
        module.__path__ = [f"{wheel}/{package.replace('.', '/')}"]
        sys.modules[package] = module
    try:
        server_args = importlib.import_module("sglang.srt.server_args")
        merger_module = importlib.import_module(_merger_module(wheel))
        parser = argparse.ArgumentParser(prog="sglang serve")
        server_args.ServerArgs.add_cli_args(parser)
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(wheel))
        os.environ.update(saved_env)
        for name in set(sys.modules) - before:
            # sglang's modules and the stand-ins go; a real package imported meanwhile (torch)
            # stays, as a C extension cannot be imported twice in one process
            module = sys.modules[name]
            if name.split(".")[0] in ("sglang", "orjson") or isinstance(module, _InertModule) or name in finder.stood_in:
                del sys.modules[name]
        sys.modules.update(hidden)
    loaded = SglangArgparse(parser, merger_module.ConfigArgumentMerger, tuple(sorted(finder.stood_in)), wheel, server_args)
    _LOADED[wheel] = loaded
    return loaded


# --- the table -------------------------------------------------------------------------------

_ACTION_KINDS = {
    argparse._StoreAction: "store",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._StoreConstAction: "store_const",
    argparse._AppendAction: "append",
    argparse._HelpAction: "help",
    argparse.BooleanOptionalAction: "boolean_optional",
}


def _plain(value: Any) -> Any:
    """A default or const as JSON: containers kept, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return {"repr": repr(value)}


def _choices(choices: Any) -> Any:
    if choices is None:
        return None
    if isinstance(choices, (set, frozenset)):
        # argparse names a set's choices in its iteration order, which string hashing makes
        # differ per process: recorded sorted, marked as a set.
        return {"set": sorted(choices)}
    return [_plain(c) for c in choices]


def action_row(action: argparse.Action) -> dict[str, Any]:
    kind = _ACTION_KINDS.get(type(action), type(action).__name__)
    row: dict[str, Any] = {
        "options": list(action.option_strings),
        "dest": action.dest,
        "action": kind,
        "type": None if action.type is None else getattr(action.type, "__name__", repr(action.type)),
        "choices": _choices(action.choices),
        "nargs": action.nargs,
        "const": _plain(action.const),
        "default": _plain(action.default),
        "required": action.required,
    }
    for extra in ("new_flag", "const_value", "error_message"):
        if hasattr(action, extra):
            row[extra] = _plain(getattr(action, extra))
    if row["type"] == "parse_cuda_graph_config_arg":
        # the module constants the type function checks each phase against
        names = action.type.__globals__
        row["type_constants"] = {
            "phases": list(names["Phase"].ALL),
            "allowed_keys": {str(k): list(v) for k, v in names["ALLOWED_KEYS_PER_PHASE"].items()},
        }
    return row


def release(wheel: Path) -> str:
    """The wheel's own version (its dist-info METADATA `Version:`)."""
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        for line in archive.read(name).decode("utf-8").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    raise KeyError(f"{wheel}: no Version in its METADATA")


def merger_keys(loaded: SglangArgparse) -> str:
    """How the release's ConfigArgumentMerger names a config key: "spellings" (0.5.23: a dest or
    any long option, `_config_keys`) or "dests" (0.5.16-0.5.22: the dest only, and only
    `_StoreTrueAction` / `_StoreAction` supported)."""
    return "spellings" if "_config_keys" in loaded.merger_class.__init__.__globals__ else "dests"


def table(loaded: SglangArgparse) -> dict[str, Any]:
    parser = loaded.parser
    return {
        "sglang": release(loaded.wheel),
        "config_merger_keys": merger_keys(loaded),
        "prog": parser.prog,
        "generated_by": "tests/oracle/sglang_argparse.py (python -m oracle.sglang_argparse --wheel PATH)",
        "stood_in": list(loaded.stood_in),
        "arguments": [action_row(a) for a in parser._actions],
    }


def dumps(data: dict[str, Any]) -> str:
    """One argument per line, after a head line holding the table's index (what a check looks
    up, by row: inkling_compat/inputs/argument_table.py `index_of`): small diffs, and a check
    parses the index and the rows it reads (`argument_table._Rows`)."""
    from inkling_compat.inputs.argument_table import index_of

    head = {k: v for k, v in data.items() if k not in ("arguments", "index")}
    head["index"] = index_of(data["arguments"])
    lines = [json.dumps(head, sort_keys=True)[:-1] + ', "arguments": [']
    rows = [json.dumps(row, sort_keys=True) for row in data["arguments"]]
    lines += [row + ("," if i < len(rows) - 1 else "") for i, row in enumerate(rows)]
    lines.append("]}")
    return "\n".join(lines) + "\n"


def table_path(version: str) -> Path:
    """Where the checker reads a release's table (inkling_compat/inputs/argument_table.py):
    the default release as plain JSON, every other one gzipped (the package stays small)."""
    from inkling_compat.inputs.argument_table import table_file

    return DATA / table_file(version)


def write(data: dict[str, Any], out: Path) -> str:
    text = dumps(data)
    if out.suffix == ".gz":
        import gzip

        # mtime 0 and no file name: the same table gives the same bytes
        out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    else:
        out.write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    from inkling_compat.inputs.versions import SGLANG_RELEASES

    cli = argparse.ArgumentParser(prog="python -m oracle.sglang_argparse", description="Write sglang's argument tables from its wheels.")
    cli.add_argument("--wheel", type=Path, action="append", default=[], help="an sglang wheel (repeatable; default: every supported release's wheel in the tests' cache)")
    cli.add_argument("--out", type=Path, default=None, help="with one --wheel: write here instead of the package's data")
    cli.add_argument("--out-dir", type=Path, default=None, help="write each table here as RELEASE.json instead of the package's data")
    args = cli.parse_args(argv)
    if not args.wheel:
        from oracle.sglang_sink import find_wheel

        args.wheel = [Path(find_wheel(version=version)) for version in SGLANG_RELEASES]
    for wheel in args.wheel:
        data = table(load(wheel))
        if args.out_dir:
            out = args.out_dir / f"{data['sglang']}.json"
        else:
            out = args.out if args.out and len(args.wheel) == 1 else table_path(data["sglang"])
        text = write(data, out)
        print(f"{out}: sglang {data['sglang']}, {text.count(chr(10)) - 2} arguments")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
