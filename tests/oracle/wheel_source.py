"""Reading sglang's own source out of its wheel and executing it with stand-in imports.

Shared by the oracles (sglang_server_args, sglang_adapter): nothing of sglang is copied into
this repository; each file is read from the wheel at test time (`sglang_sink.find_wheel`).

* `read(wheel, path)`: one file's text;
* `top_level(source, name)` / `method(source, cls, name)`: the source of one top-level
  assignment or function (or one method) of a file, for a constant or a small function whose
  module imports too much to execute whole;
* `exec_module(source, origin, name, stubs)`: execute a file as a module while `stubs`
  (dotted name -> attributes) stand in `sys.modules` for what it imports; tracebacks show the
  wheel's lines (linecache).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import linecache
import sys
import types
import zipfile
from pathlib import Path
from typing import Any, Iterator


def read(wheel: Path, path: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(path).decode("utf-8")


def sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def top_level(source: str, name: str) -> str:
    """The exact source text of the top-level `def name` or `name = ...` of a module."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return ast.get_source_segment(source, node) or ""
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return ast.get_source_segment(source, node) or ""
    raise KeyError(f"no top-level {name!r}")


def method(source: str, class_name: str, name: str) -> str:
    """The source of method `name` of top-level class `class_name`, dedented to a plain def."""
    import textwrap

    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return textwrap.dedent(ast.get_source_segment(source, item, padded=True) or "")
    raise KeyError(f"no {class_name}.{name}")


def stub_modules(leaves: dict[str, dict[str, Any]]) -> dict[str, types.ModuleType]:
    """Modules (and their parent packages) holding only the given attributes."""
    modules: dict[str, types.ModuleType] = {}
    for dotted, attributes in leaves.items():
        parts = dotted.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            modules.setdefault(parent, types.ModuleType(parent))
            modules[parent].__path__ = []  # a package
        module = modules.get(dotted) or types.ModuleType(dotted)
        module.__dict__.update(attributes)
        modules[dotted] = module
    return modules


@contextlib.contextmanager
def _swapped_in(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    """`modules` in sys.modules for the duration; whatever was there before comes back."""
    saved = {key: sys.modules.get(key) for key in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for key, previous in saved.items():
            if previous is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = previous


@contextlib.contextmanager
def installed(stubs: dict[str, dict[str, Any]]) -> Iterator[None]:
    """The stand-in modules in sys.modules for the duration (for imports made at call time)."""
    with _swapped_in(stub_modules(stubs)):
        yield


def exec_module(source: str, origin: str, name: str, stubs: dict[str, dict[str, Any]]) -> types.ModuleType:
    """Execute `source` as module `name`, with the stand-ins in sys.modules meanwhile."""
    module = types.ModuleType(name)
    modules = stub_modules(stubs)
    modules[name] = module  # dataclasses (and pickling) look a class's module up while it is defined
    with _swapped_in(modules):
        module.__file__ = origin
        linecache.cache[origin] = (len(source), None, source.splitlines(True), origin)
        exec(compile(source, origin, "exec"), module.__dict__)
    return module
