"""The sglang versions rules can be selected for (no pydantic: `inkling-compat --help` reads them).

"53ccafdf" is the public sglang revision 53ccafdf023b (between releases) whose
inkling_common/lora.py words several sink errors differently (shared/reference/inkling_spec.md
section 5.2); rules without a variant for it are assumed to read as in 0.5.23.
"""

# This package's own version (pyproject.toml says the same; inkling_compat.__version__).
PACKAGE_VERSION = "0.1.0"

SGLANG_DEFAULT_VERSION = "0.5.23"
SGLANG_VERSIONS = ("0.5.23", "53ccafdf")
