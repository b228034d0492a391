"""The package list, found rather than listed (the rest of the metadata is in pyproject.toml).

`kernels/`, `rules/` and `schemas/` stay top-level folders but install as
`inkling_compat.kernels`, `inkling_compat.rules` and `inkling_compat.schemas` (pyproject's
package-dir); pyproject's `packages.find` cannot rename a folder, so the search is here:
every folder under the four roots, namespace folders too (rules/<family>/ and
inkling_compat/data/ hold only data files, which setuptools ships only as packages).
"""

from setuptools import find_namespace_packages, setup

# Installed name -> source folder (must match [tool.setuptools.package-dir] in pyproject.toml).
MAPPED = {"inkling_compat.kernels": "kernels", "inkling_compat.rules": "rules", "inkling_compat.schemas": "schemas"}
SKIP = ["*__pycache__*", "*.egg-info*"]


def packages() -> list[str]:
    found = find_namespace_packages(include=["inkling_compat", "inkling_compat.*"], exclude=SKIP)
    for name, folder in MAPPED.items():
        found += [name] + [f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=SKIP)]
    return sorted(found)


setup(packages=packages())
