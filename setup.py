"""The package list, found rather than listed (the rest of the metadata is in pyproject.toml).

`kernels/`, `rules/` and `schemas/` stay top-level folders but install as
`inkling_compat.kernels`, `inkling_compat.rules` and `inkling_compat.schemas` (pyproject's
package-dir); pyproject's `packages.find` cannot rename a folder, so the search is here:
every folder under the four roots, namespace folders too (rules/<family>/ and
inkling_compat/data/ hold only data files, which setuptools ships only as packages).

A built package trusts its compiled rules artifact without hashing its rule files at every
start (inkling_compat/engine/compiled_rules.py), so the build refuses an artifact that is not
current for the rules and code it ships (`make generate` writes it).
"""

import importlib.util
import os

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))

# Installed name -> source folder (must match [tool.setuptools.package-dir] in pyproject.toml).
MAPPED = {"inkling_compat.kernels": "kernels", "inkling_compat.rules": "rules", "inkling_compat.schemas": "schemas"}
SKIP = ["*__pycache__*", "*.egg-info*"]


def packages() -> list[str]:
    found = find_namespace_packages(include=["inkling_compat", "inkling_compat.*"], exclude=SKIP)
    for name, folder in MAPPED.items():
        found += [name] + [f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=SKIP)]
    return sorted(found)


def check_artifact() -> None:
    """Refuse to build with a stale compiled rules artifact (inkling_compat/data/rules_compiled.py
    and rules.compiled.json)."""
    path = os.path.join(HERE, "inkling_compat", "engine", "compiled_rules.py")
    spec = importlib.util.spec_from_file_location("_inkling_compat_compiled_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (standard library only at import)
    files = []
    for name in (module.ARTIFACT, module.WHOLES):
        with open(os.path.join(HERE, "inkling_compat", "data", name), "rb") as handle:
            files.append(handle.read())
    if not module.is_current_for(os.path.join(HERE, "rules"), *files):
        raise SystemExit(f"inkling_compat/data/{module.ARTIFACT} and {module.WHOLES} are not current for rules/ and the code: run `make generate`")


class BuildPy(build_py):
    def run(self) -> None:
        if not getattr(self, "editable_mode", False):  # (an editable install hashes the files at every start)
            check_artifact()
        super().run()


setup(packages=packages(), cmdclass={"build_py": BuildPy})
