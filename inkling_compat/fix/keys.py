"""Which key of a file (or flag of a command) a fix's edit means: the same sglang argument in
any of its spellings. A fix names an argument by its dest (`ep_join_mode`); the user's file or
command names it by a flag (`--elastic-ep-join-mode`, `elastic_ep_join_mode`), or by the dest
where the project's own format is used. Keys sglang's table does not know (an environment
switch, a nested key) are compared with '-' read as '_'.
"""

from __future__ import annotations

from inkling_compat.inputs.config_keys import normal, spelled


def identity(key: str) -> str:
    """What `key` is compared by: its argument's dest where sglang's table knows it."""
    from inkling_compat.inputs import argument_table

    row = argument_table.lookup(key)
    return row["dest"] if row is not None else normal(key)


def same(written: str, wanted: str) -> bool:
    """Whether the key `written` in the user's file is the key `wanted` of an edit."""
    return normal(written) == normal(wanted) or identity(written) == identity(wanted)


def new_name(key: str, dashes: bool) -> str:
    """The name a key the fix adds is written with: the argument's flag (a dest such as
    `ep_join_mode` is no flag: `--elastic-ep-join-mode` is), dash- or underscore-spelt."""
    from inkling_compat.inputs import argument_table

    row = argument_table.lookup(key)
    if row is not None and row["options"] and normal(row["options"][0][2:]) != normal(key) and row["dest"] == normal(key):
        key = normal(argument_table.flag(row)[2:])
    return spelled(key, dashes)
