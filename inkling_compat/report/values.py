"""How values are written into a rule's message: Python's str() by default (sglang's
f-strings), `{hole!r}` as repr(), `{hole!j}` as JSON writes the value (the spelling of the
user's file: `NaN`, `Infinity`, `true`, a quoted string), bounded in length.

The values are the typed ones (engine/context.py `Contexts.exact` for a param that names a
path): an int is printed with every digit, which CEL, whose ints are 64-bit, cannot do."""

from __future__ import annotations

import json
import string
from typing import Any

_JSON_TYPES = (dict, list, str, int, float, bool, type(None))


def json_text(value: Any, limit: int = 40) -> str:
    """A value as JSON for a message, at most `limit` characters; containers by their size
    beyond a few items (never a walk over a large or deep value)."""
    if isinstance(value, (list, dict)):
        small = len(value) <= 4 and all(not isinstance(v, (list, dict)) for v in (value.values() if isinstance(value, dict) else value))
        if not small:
            return f"a {type(value).__name__} of {len(value)} item(s)"
    if isinstance(value, int) and not isinstance(value, bool):
        # Every digit, never truncated: the input readers refuse more than 100 (inputs/limits.py),
        # and a message that names an int must name the one the file holds.
        return str(value) if abs(value) < 10**100 else f"an int of {int(value.bit_length() * 0.30103) + 1} digits"
    if type(value) not in _JSON_TYPES:
        return f"a {type(value).__name__}"
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class MessageFormatter(string.Formatter):
    """str.format with the `!j` conversion (engine/rule_schema.CONVERSIONS)."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "j":
            return json_text(value)
        return super().convert_field(value, conversion)


FORMATTER = MessageFormatter()
