"""The sglang versions the checker knows (no pydantic: `inkling-compat --help` reads them).

`SGLANG_RELEASES`: every sglang release on PyPI that ships Inkling (`models/inkling*`: 0.5.16
to 0.5.23; 0.5.15.post1 and older have none), newest first; each has its own argument table
(inkling_compat/data/, generated from its wheel). "53ccafdf" is the public sglang revision
53ccafdf023b (between releases) whose inkling_common/lora.py words several sink errors
differently (shared/reference/inkling_spec.md section 5.2); its arguments are read as 0.5.23's
(`TABLE_RELEASE`), and rules without a variant for it are assumed to read as in 0.5.23.
"""

# This package's own version (pyproject.toml says the same; inkling_compat.__version__).
PACKAGE_VERSION = "0.1.0"

SGLANG_DEFAULT_VERSION = "0.5.23"
SGLANG_RELEASES = ("0.5.23", "0.5.22", "0.5.21", "0.5.20", "0.5.19", "0.5.18", "0.5.17", "0.5.16")
SGLANG_REVISIONS = ("53ccafdf",)
SGLANG_VERSIONS = SGLANG_RELEASES + SGLANG_REVISIONS

# The release whose argument table a version reads.
TABLE_RELEASE = {"53ccafdf": "0.5.23"}


def supported_text() -> str:
    """The supported range in words (an unknown release's message names it)."""
    return f"{SGLANG_RELEASES[-1]} to {SGLANG_RELEASES[0]}, and revision {', '.join(SGLANG_REVISIONS)}"
