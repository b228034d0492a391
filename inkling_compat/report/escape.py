"""Names shown as data: what a terminal, a CI log or an XML reader would act on is escaped.

A folder, file or key name reaches the reports as it is; in the text, GitHub and JUnit outputs
every control character (but tab and newline), DEL, the C1 controls, the bidirectional overrides
(which reorder what is shown) and the lone surrogates of a name that is not UTF-8 are written as
`\\x1b`, `\\u202e`, `\\xff` (the byte the name held). An escape sequence in a name can then
neither move the cursor, hide the summary, nor make the XML invalid. The text output's own colours
are kept. JSON and SARIF are written by `json.dumps`, which escapes all of these already.
"""

from __future__ import annotations

import functools
import re

# What is escaped; of ASCII, only these: the usual text (ASCII, these absent) is told without the
# regex, which is compiled on first use (every start would pay for it otherwise).
_ASCII_UNSAFE = tuple(chr(code) for code in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F))


@functools.cache
def _unsafe() -> re.Pattern[str]:
    return re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


# The text renderer's colours (report/text.py _COLORS, _RESET): the only sequences let through.
@functools.cache
def _own_color() -> re.Pattern[str]:
    return re.compile("(\x1b\\[(?:0|2|3[1-5])m)")


def _escaped(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, keep_colors: bool = False) -> str:
    """`text` with what a reader would act on escaped (see the module doc)."""
    if text.isascii() and not any(ch in text for ch in _ASCII_UNSAFE):
        return text
    unsafe = _unsafe()
    if not unsafe.search(text):
        return text
    if not keep_colors:
        return unsafe.sub(_escaped, text)
    parts = _own_color().split(text)
    return "".join(part if index % 2 else unsafe.sub(_escaped, part) for index, part in enumerate(parts))
