"""The package's layout shows its data flow: few top-level modules, no import cycle, and the
checker never imports the runtime's heavy dependencies."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import inkling_compat

PACKAGE = Path(inkling_compat.__file__).resolve().parent
MAX_TOP_LEVEL_MODULES = 8


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for p in PACKAGE.rglob("*.py")
        if "kernels" not in p.relative_to(PACKAGE).parts[:1]  # kernels/ maps in from the top-level folder
    }


def _imports_at_module_level(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of the package imported when `name` is imported (not inside functions, not
    under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body + getattr(node, "orelse", []) + [s for h in getattr(node, "handlers", []) for s in h.body])
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    found.add(candidate if candidate in known else base)

    visit(tree.body)
    return {m for m in found if m in known and m != name}


def test_at_most_eight_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_import_cycle():
    modules = _modules()
    known = set(modules)
    graph = {name: _imports_at_module_level(path, name, known) for name, path in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_checking_path_imports_no_runtime_dependency():
    code = (
        "import sys; from inkling_compat import check; import inkling_compat.cli, inkling_compat.fleet;"
        "check('examples/serve.yaml', 'examples/adapter', model='examples/config.json');"
        "print(sorted(m for m in ('torch', 'triton', 'hypothesis', 'numpy', 'safetensors') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_help_imports_no_engine():
    code = (
        "import sys, contextlib, io\nimport inkling_compat.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: c.main(['--help'])\n    except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'inkling_compat.engine', 'inkling_compat.facts'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert out.stdout.strip() == "[]"
