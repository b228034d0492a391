"""The hostile-input fuzz harness (tests/test_hostile_inputs.py, `make fuzz-hostile`).

`cases.py` turns a seed and an index into a recipe (a JSON-able description of one mutation
of the bundled examples) and materializes it as files; `runner.py` runs recipes in-process
in bounded worker processes and classifies each outcome; `known.py` lists the failures that
are known and not yet fixed (each with its reproducer, xfail-strict in the test file).
"""
