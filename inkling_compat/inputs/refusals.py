"""sglang's refusals while it parses a launch command, as items the rules report.

sglang 0.5.23 parses its arguments before anything else (`prepare_server_args`): argparse's
`error()` prints "sglang serve: error: <message>" and exits 2; its own `--config` merger raises
ValueError; the `--lora-paths` action raises from json.loads or an assert. Each stops the
launch, so a refusal is a problem of the deployment (exit 1, a rule per kind under
rules/server_args/, `input.refusals`), never unusable input. A refusal item is a plain dict:

  kind         which rule reports it (`KINDS`)
  message      sglang's words (argparse's text after "sglang serve: error: ", or the exception's)
  error_class  the exception sglang ends with (SystemExit for argparse's exit 2)
  file, key    where: the command (key "argument 12: --max-lora-rank") or its --config file (the key)
  fix          what to write instead, where the refusal itself determines it ("" if not)

Deprecation warnings the parser logs (`'--disable-cuda-graph' is deprecated ...`) are items of
`input.parse_warnings`: kind "deprecated", sglang's text, the place and the replacement flag.
"""

from __future__ import annotations

import functools
import re
from typing import Any

KINDS = (
    "unrecognized-arguments",
    "ambiguous-option",
    "invalid-choice",
    "invalid-value",
    "required-arguments",
    "expected-argument",
    "argparse-error",
    "lora-paths-action",
    "config-file",
)


@functools.cache
def _argument() -> re.Pattern[str]:
    return re.compile(r"^argument (?P<option>[^:]+): (?P<rest>.*)$", re.S)


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "human_readable_int": "an integer, optionally with an SI (k, M, G, T) or IEC (Ki, Mi, Gi, Ti) suffix",
    "json_list_type": "a JSON list",
    "loads": "JSON",
    "parse_cuda_graph_config_arg": "a JSON object",
}


def argparse_refusal(message: str) -> dict[str, str]:
    """The kind and fix of one argparse message (Python 3.11's wording, which sglang prints)."""
    if message.startswith("unrecognized arguments: "):
        return {"kind": "unrecognized-arguments", "fix": ""}
    if message.startswith("ambiguous option: "):
        match = re.match(r"ambiguous option: (\S+) could match (.*)$", message, re.S)
        flags = [f.strip() for f in match.group(2).split(",")] if match else []
        fix = f"Write the full flag: {' or '.join(flags)}" if flags else ""
        return {"kind": "ambiguous-option", "fix": fix}
    if message.startswith("the following arguments are required: "):
        names = message.split(": ", 1)[1]
        return {"kind": "required-arguments", "fix": f"Add {names.split(',')[0].split('/')[0].strip()} (the model's folder or its hub id)" if "--model-path" in names else f"Add {names}"}
    match = _argument().match(message)
    if match is None:
        return {"kind": "argparse-error", "fix": ""}
    option, rest = match.group("option").split("/")[0], match.group("rest")
    if rest.startswith("invalid choice: "):
        choices = re.search(r"\(choose from (.*)\)$", rest, re.S)
        return {"kind": "invalid-choice", "fix": f"Give {option} one of: {choices.group(1)}" if choices else ""}
    if rest.startswith("expected ") and "argument" in rest:
        return {"kind": "expected-argument", "fix": f"Give {option} its value, or remove the flag"}
    typed = re.match(r"invalid (\S+) value: ", rest)
    if typed:
        words = _TYPE_WORDS.get(typed.group(1))
        return {"kind": "invalid-value", "fix": f"Give {option} {words}" if words else ""}
    if rest.startswith("ignored explicit argument"):
        return {"kind": "argparse-error", "fix": f"Write {option} alone: it takes no value"}
    return {"kind": "invalid-value", "fix": ""}  # an ArgumentTypeError of sglang's own type function


def config_fix(message: str) -> str:
    """What to do about one of ConfigArgumentMerger's refusals."""
    if message.startswith("Config file must be YAML format"):
        return "Give --config a .yaml or .yml file (sglang reads no other format)"
    if message.startswith("Config file not found"):
        return "Give --config the path of an existing file (relative to the directory sglang starts in)"
    if message.startswith("Multiple config files"):
        return "Give --config once"
    if message.startswith("No config file specified"):
        return "Give --config the path of a YAML file"
    if message.startswith("Config file must contain a dictionary"):
        return "Write the file as a mapping of argument names to values (model-path: ..., tp-size: ...)"
    if message.startswith("Unsupported config option"):
        return "Give this argument on the command line instead of in the config file"
    return ""


def item(kind: str, message: str, error_class: str, file: str, key: str, fix: str = "") -> dict[str, Any]:
    return {"kind": kind, "message": message, "error_class": error_class, "file": file, "key": key, "fix": fix}
