"""What `pip install inkling-compat` gets: the built wheel holds every module and data file of
the source tree under its installed name, the build log is clean, and the sdist carries what
the tests read. (The suite itself runs on an editable install, which would not notice a
package left out of the wheel; .ci/wheel_smoke.sh runs the installed commands.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Source folder -> installed package (pyproject's package-dir, setup.py's MAPPED).
ROOTS = {"inkling_compat": "inkling_compat", "kernels": "inkling_compat/kernels", "rules": "inkling_compat/rules", "schemas": "inkling_compat/schemas"}
SHIPPED = (".py", ".yaml", ".json", ".typed")

pytestmark = pytest.mark.skipif(not (ROOT / "setup.py").is_file() or not (ROOT / "kernels").is_dir(), reason="needs the source tree (setup.py, kernels/)")


def _source_files() -> set[str]:
    """Every file the package is made of, by its path inside the installed wheel."""
    out = set()
    for folder, installed in ROOTS.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in SHIPPED and "__pycache__" not in path.parts:
                out.add(f"{installed}/{path.relative_to(ROOT / folder).as_posix()}")
    return out


def _build_wheel(out: Path) -> tuple[list[str], str]:
    work = out / "src"  # a copy: the build writes build/ and *.egg-info next to the sources
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"))
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v", str(work), "-w", str(out / "dist")],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (wheel,) = (out / "dist").glob("inkling_compat-*.whl")
    with zipfile.ZipFile(wheel) as z:
        return z.namelist(), run.stdout + run.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], str]:
    """(the wheel's file list, pip's build log): one build per run, without build isolation (the
    test environment's setuptools, so it runs offline). Under pytest-xdist the workers share it:
    the first to ask builds it into the run's common temporary folder, the others read it there."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _build_wheel(tmp_path_factory.mktemp("wheel"))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, above each worker's own
    result = shared / "packaging-wheel.json"
    with FileLock(str(shared / "packaging-wheel.lock")):
        if not result.is_file():
            names, log = _build_wheel(tmp_path_factory.mktemp("wheel"))
            result.write_text(json.dumps({"names": names, "log": log}), encoding="utf-8")
        data = json.loads(result.read_text(encoding="utf-8"))
    return data["names"], data["log"]


def test_the_wheel_holds_every_subpackage_and_file(built: tuple[list[str], str]) -> None:
    names, _ = built
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith("/__init__.py")}
    source_packages = {f"{installed}/{p.parent.relative_to(ROOT / folder).as_posix()}".rstrip("/.") for folder, installed in ROOTS.items() for p in (ROOT / folder).rglob("__init__.py") if "__pycache__" not in p.parts}
    assert "inkling_compat/runtime/tp" in source_packages  # (the package a hand-kept list once missed)
    assert source_packages - packages == set()
    missing = _source_files() - set(names)
    assert missing == set(), f"left out of the wheel: {sorted(missing)}"


def test_the_wheel_carries_the_license_and_current_metadata(built: tuple[list[str], str]) -> None:
    names, _ = built
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8").splitlines()[0]


def test_the_build_log_is_clean(built: tuple[list[str], str]) -> None:
    _, log = built
    for bad in ("Package would be ignored", "SetuptoolsDeprecationWarning", "no files found matching", "warning: no previously-included"):
        assert bad not in log, next(line for line in log.splitlines() if bad in line)


def test_the_sdist_carries_what_the_tests_read(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout (the tracked files are the reference)")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    tracked = [t for t in tracked if (ROOT / t).is_file()]
    work = tmp_path / "src"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"))
    run = subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta; print(build_meta.build_sdist({str(tmp_path / 'dist')!r}))"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (sdist,) = (tmp_path / "dist").glob("inkling_compat-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert "no files found matching" not in run.stderr
    not_shipped = {".gitignore"}  # (a working tree's file, not a source)
    missing = sorted(t for t in tracked if t not in names and t not in not_shipped)
    assert missing == [], f"tracked but not in the sdist: {missing[:20]}"
    assert not any("__pycache__" in n for n in names)


# `python -m inkling_compat` in the repository root: the checkout's `inkling_compat/` comes
# first on sys.path, ahead of any installed copy. The editable install's finder (the suite's
# environment) is taken away first, so the checkout is all there is, as beside a wheel install.
_CHECKOUT_ONLY = """
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path_hooks[:] = [h for h in sys.path_hooks if not getattr(h, "__module__", "").startswith("__editable__")]
sys.path_importer_cache.clear()
sys.argv = ["inkling_compat", *sys.argv[1:]]
runpy.run_module("inkling_compat", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(("argv", "status", "last"), [
    (["check", "--config", "examples/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/adapter_pool.yaml"], 0, "ok: no errors"),
    (["check", "--config", "examples/broken/serve.yaml", "--model", "examples/config.json", "--adapter", "examples/broken/adapter_pool.yaml"], 1, ""),
    (["--version"], 0, "inkling-compat "),
    (["rules", "sink-pool-rank-mismatch"], 0, ""),
])
def test_python_m_in_the_checkout_runs_the_checkout(argv: list[str], status: int, last: str) -> None:
    run = subprocess.run([sys.executable, "-c", _CHECKOUT_ONLY, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "internal error" not in run.stderr, run.stderr
    assert run.returncode == status, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1].startswith(last)


def test_python_m_in_the_checkout_imports_the_checkouts_folders() -> None:
    code = _CHECKOUT_ONLY.replace('runpy.run_module("inkling_compat", run_name="__main__", alter_sys=True)', "import inkling_compat.rules, inkling_compat.schemas, inkling_compat.kernels as k; print(k.__file__)")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == str(ROOT / "kernels" / "__init__.py")
