# Developer entry points. The README's commands set up a fresh machine; these assume .venv.
PY ?= .venv/bin/python
FUZZ_EXAMPLES ?= 100000
FUZZ_JOBS ?= 2

.PHONY: test generate fidelity fidelity-all fuzz fuzz-hostile audit

test:
	$(PY) -m pytest -q -n 2

# Every generated file: schemas, the compiled rules artifact, rule pages, facts and fixes docs,
# README.md's figures and check outputs, the expanded-rule and format snapshots.
generate:
	$(PY) -m inkling_compat.publish all

# The differential properties against sglang's own code (lora.py, server args, adapter loader,
# memory pool) at their default size.
fidelity:
	$(PY) -m pytest -q tests/test_fidelity.py tests/test_fidelity_server_args.py tests/test_fidelity_adapter.py tests/test_fidelity_pool.py

# Every supported sglang release (0.5.16-0.5.23), not only the three newest the suite runs: each
# release's argument table regenerated from its wheel, random launch commands through its own
# parser (tests/test_fidelity_releases.py), random server configs through its own
# check_lora_server_args and LoRA choices (tests/test_fidelity_server_args.py), the raise-site
# audit of each release (tests/test_audit.py), the rules of sites only older releases have
# against their own code (tests/test_fidelity_older_sites.py), the NVFP4 linears' in-features
# check (tests/test_fidelity_nvfp4_linear.py) and the legacy sink's initialize_lora,
# set_lora_info and slice properties through each release's lora.py (tests/test_fidelity.py);
# wheels downloaded into the cache; docs/fidelity.md.
fidelity-all:
	INKLING_COMPAT_ALL_RELEASES=1 INKLING_COMPAT_REQUIRE_ORACLE=1 $(PY) -m pytest -q tests/test_fidelity_releases.py tests/test_fidelity_server_args.py tests/test_fidelity_older_sites.py tests/test_fidelity_nvfp4_linear.py tests/test_audit.py tests/test_fidelity.py

# The same properties with FUZZ_EXAMPLES examples each, in FUZZ_JOBS processes; prints the
# summary table (also in build/fuzz/summary.md). Needs the sglang 0.5.23 wheel (see docs/fidelity.md).
fuzz: fuzz-hostile
	INKLING_COMPAT_REQUIRE_ORACLE=1 $(PY) tests/oracle/fuzz.py --examples $(FUZZ_EXAMPLES) --jobs $(FUZZ_JOBS) --out build/fuzz

# Hostile inputs (tests/test_hostile_inputs.py at full size): FUZZ_EXAMPLES mutated copies of the
# bundled examples in FUZZ_JOBS bounded worker processes; every outcome must be a report or an
# exit-2 input error. Prints the outcome table (also build/fuzz-hostile/summary.md); figures in docs/fuzz.md.
fuzz-hostile:
	$(PY) tests/hostile/runner.py --examples $(FUZZ_EXAMPLES) --jobs $(FUZZ_JOBS) --out build/fuzz-hostile

# The raise-site audit of another sglang release: the to-do list for supporting it (the sites it
# adds, rewords and removes compared to 0.5.23 that no rule, variant, exclusion or site data
# accounts for; moved lines are no problem); exit 1 while anything is to do (docs/fidelity.md).
# AGAINST=path/to/sglang-Y.whl compares with another release; AS_NEW=1 treats the wheel's
# release as new (the rules and exclusions as of AGAINST's).
SGLANG_WHEEL ?=
AGAINST ?=
AS_NEW ?=
audit:
	@test -n "$(SGLANG_WHEEL)" || { echo "usage: make audit SGLANG_WHEEL=path/to/sglang-X.whl [AGAINST=path/to/sglang-Y.whl AS_NEW=1]"; exit 2; }
	$(PY) tests/oracle/audit.py $(SGLANG_WHEEL) $(if $(AGAINST),--against $(AGAINST)) $(if $(AS_NEW),--as-new)
