"""Drop-in CI: the pre-commit hook (`hook.py`, .pre-commit-hooks.yaml) and the GitHub Action's
step (`action.py`, action.yml), both thin layers over `inkling-compat check`; `targets.py` reads
which files make up a check from the project's configuration."""
