"""The rule a check reads: plain classes built from the compiled artifact's data, without
validation (the artifact holds only rules that passed engine/rule_schema.py's pydantic models
when it was generated), with the same attributes, defaults and `model_dump` as those models.

A check imports no pydantic for its rules: validating some 200 rules costs tens of
milliseconds per start. tests/test_compiled_rules.py proves each rule read here dumps as the
validated model of the same file does. sglang's stages live here, read by both.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

# sglang's start-up sequence; problems are reported in this order (then by `order`).
STAGES = (
    "argparse",  # argparse choices and types
    "server_args",  # arg_groups/*_hook.py resolution checks
    "model_config",  # config.json / quantization config parsing
    "model_init",  # module construction
    "weight_load",  # weight loading and post-load processing
    "adapter_load",  # LoRAManager.init_lora_adapters / load_lora_adapter
    "lora_modules",  # init_lora_shapes, init_lora_modules -> initialize_lora
    "pool_bind",  # update_lora_info -> set_lora_info
    "pool_load",  # adapter weights into the pool (slice_moe_lora_*), slot refresh
    "first_forward",  # fails on the first request, not at start-up
)

_REQUIRED: Any = object()


class _Plain:
    """Fields (name, key in the file, default: a value, `list`/`dict` for a new empty one, or
    required) read from a mapping; `NESTED`: fields holding one (or a list of) another class."""

    __slots__ = ()
    FIELDS: tuple[tuple[str, str, Any], ...] = ()
    NESTED: dict[str, tuple[type["_Plain"], bool]] = {}

    def __init__(self, data: dict[str, Any]):
        for name, key, default in self.FIELDS:
            if key in data:
                value = data[key]
                nested = self.NESTED.get(name)
                if nested is not None and value is not None:
                    cls, many = nested
                    value = [cls(v) for v in value] if many else cls(value)
            elif default is _REQUIRED:
                raise ValueError(f"{type(self).__name__}: missing field {key!r}")
            else:
                value = default() if default is list or default is dict else default
            object.__setattr__(self, name, value)

    def model_dump(self, *, mode: str = "python", by_alias: bool = False, exclude: Any = None, exclude_none: bool = False) -> dict[str, Any]:
        """The fields as pydantic's `model_dump` of the same model writes them (in order; the
        values are JSON's own types, the same in either `mode`)."""
        out = {}
        for name, key, _ in self.FIELDS:
            if exclude and name in exclude:
                continue
            value = getattr(self, name)
            if exclude_none and value is None:
                continue
            out[key if by_alias else name] = _dump(value, by_alias, exclude_none)
        return out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        """A shallow copy with `update`'s fields replaced (not validated, as pydantic's)."""
        copy = object.__new__(type(self))
        for name, _, _ in self.FIELDS:
            object.__setattr__(copy, name, getattr(self, name))
        for name, value in (update or {}).items():
            object.__setattr__(copy, name, value)
        return copy

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n, _, _ in self.FIELDS) + ")"


def _dump(value: Any, by_alias: bool, exclude_none: bool) -> Any:
    if isinstance(value, _Plain):
        return value.model_dump(by_alias=by_alias, exclude_none=exclude_none)
    if isinstance(value, list):
        return [_dump(v, by_alias, exclude_none) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v, by_alias, exclude_none) for k, v in value.items()}
    return value


def _fields(*names: str | tuple[str, Any] | tuple[str, str, Any]) -> tuple[tuple[str, str, Any], ...]:
    out = []
    for item in names:
        if isinstance(item, str):
            out.append((item, item, _REQUIRED))
        elif len(item) == 2:
            out.append((item[0], item[0], item[1]))
        else:
            out.append(item)  # type: ignore[arg-type]
    return tuple(out)


class Source(_Plain):
    __slots__ = ("path", "line", "function", "commit", "commit_line")
    FIELDS = _fields("path", ("line", None), ("function", None), ("commit", None), ("commit_line", None))


class Join(_Plain):
    __slots__ = ("group", "prefix", "separator")
    FIELDS = _fields("group", "prefix", ("separator", "; "))


class Example(_Plain):
    __slots__ = ("description", "input", "message")
    FIELDS = _fields("description", "input", ("message", None))


class Examples(_Plain):
    __slots__ = ("fire", "pass_")
    FIELDS = _fields("fire", ("pass_", "pass", _REQUIRED))
    NESTED = {"fire": (Example, True), "pass_": (Example, True)}


# What a variant may replace of its rule: every field of a variant but its versions (the
# validated model engine/rule_schema.Variant has these fields: tests/test_compiled_rules.py).
VARIANT_FIELDS = ("message", "message_pattern", "params", "error_class", "when", "condition", "source", "explanation", "fixes", "examples")


class Variant(_Plain):
    __slots__ = ("sglang_versions", *VARIANT_FIELDS)
    FIELDS = _fields("sglang_versions", *((name, None) for name in VARIANT_FIELDS))
    NESTED = {"source": (Source, False), "examples": (Examples, False)}


class FixEditReading:
    """What an edit says, read from its fields: one definition for the validated model
    (engine/rule_schema.FixEdit) and the record a check reads (FixEdit below)."""

    __slots__ = ()  # (the fields are the subclass's: set, value, remove, rename, to, when)

    @property
    def kind(self) -> str:
        return "set" if self.set is not None else "remove" if self.remove is not None else "rename"

    @property
    def key(self) -> str:
        return self.set or self.remove or self.rename or ""

    def expressions(self) -> dict[str, str]:
        """field -> CEL text of this edit (for the load-time path check and compilation)."""
        out = {}
        if self.value is not None:
            out["value"] = self.value
        if self.when is not None:
            out["when"] = self.when
        return out


class FixEdit(_Plain, FixEditReading):
    """One change to the server config (engine/rule_schema.FixEdit)."""

    __slots__ = ("set", "value", "remove", "rename", "to", "when")
    FIELDS = _fields(("set", None), ("value", None), ("remove", None), ("rename", None), ("to", None), ("when", None))



class FixSpecReading:
    """What a fix's expressions are, read from its fields: one definition for the validated
    model (engine/rule_schema.FixSpec) and the record a check reads (FixSpec below)."""

    __slots__ = ()  # (the fields are the subclass's: safety, description, for_each, when, edits)

    def expressions(self) -> dict[str, str]:
        """field -> CEL text of the fix (for the load-time path check and compilation)."""
        out = {}
        if self.for_each is not None:
            out["fix.for_each"] = self.for_each
        if self.when is not None:
            out["fix.when"] = self.when
        for index, edit in enumerate(self.edits):
            out.update({f"fix.edits.{index}.{name}": e for name, e in edit.expressions().items()})
        return out


class FixSpec(_Plain, FixSpecReading):
    """A machine-applicable fix (engine/rule_schema.FixSpec)."""

    __slots__ = ("safety", "description", "for_each", "when", "edits")
    FIELDS = _fields("safety", "description", ("for_each", None), ("when", None), "edits")
    NESTED = {"edits": (FixEdit, True)}


class RuleReading:
    """A rule as it reads in one sglang version: one definition for the validated model
    (engine/rule_schema.Rule) and the record a check reads (Rule below)."""

    __slots__ = ()  # (the fields are the subclass's: sglang_versions, variants, ...)

    def for_version(self, version: str) -> "Any | None":
        """The rule as it reads in `version` (a variant merged in), or None if it does not apply."""
        assert self.sglang_versions is not None
        if version in self.sglang_versions:
            return self
        for variant in self.variants:
            if version in variant.sglang_versions:
                overrides = {name: value for name in VARIANT_FIELDS if (value := getattr(variant, name)) is not None}
                return self.model_copy(update=dict(overrides, sglang_versions=list(variant.sglang_versions), variants=[]))
        return None


class Rule(_Plain, RuleReading):
    """One rule file, as engine/rule_schema.Rule reads it (`sglang_versions` left out: every
    known version not taken by a variant)."""

    __slots__ = (
        "id", "title", "severity", "origin", "error_class", "message", "message_pattern", "params", "join", "source", "sglang_versions",
        "variants", "stage", "order", "scope", "after", "stops", "any_model", "inkling_only", "when", "condition", "field_paths",
        "because", "explanation", "fixes", "fix_hint", "fix", "examples", "references",
    )  # fmt: skip
    FIELDS = _fields(
        "id", "title", "severity", "origin", "error_class", "message", "message_pattern", ("params", dict), ("join", None), ("source", None),
        ("sglang_versions", None), ("variants", list), "stage", ("order", None), ("scope", "global"), ("after", list), ("stops", False),
        ("any_model", False), ("inkling_only", False), ("when", "true"), "condition", ("field_paths", list), ("because", None),
        "explanation", "fixes", ("fix_hint", None), ("fix", None), "examples", ("references", list),
    )  # fmt: skip
    NESTED = {"join": (Join, False), "source": (Source, False), "variants": (Variant, True), "fix": (FixSpec, False), "examples": (Examples, False)}

    def __init__(self, data: dict[str, Any]):
        super().__init__(data)
        if self.sglang_versions is None:
            object.__setattr__(self, "sglang_versions", self.default_versions(self.variants))

    @staticmethod
    def default_versions(variants: "list[Variant]") -> list[str]:
        """Every known version not taken by a variant (what `sglang_versions` left out means)."""
        from inkling_compat.inputs.versions import SGLANG_VERSIONS

        taken = {v for variant in variants for v in variant.sglang_versions}
        return [v for v in SGLANG_VERSIONS if v not in taken]


class PartialRule(Rule):
    """A `Rule` of the compiled artifact with only the fields a check reads of every rule set
    (`CHECK_FIELDS`): the others are read from the rule's whole record (`rest()`: parsed from
    the artifact's line of that rule) when one is first read. A check reads the rest only of
    the rules it reports, so it parses a fraction of the artifact; every field reads as the
    whole record's (tests/test_compiled_rules.py)."""

    __slots__ = ("_rest", "_params")

    def __init__(self, values: tuple[Any, ...], rest: Any):
        """`values`: the `CHECK_FIELDS` in `CHECK_NAMES` order, defaults filled in and
        `sglang_versions` resolved, lists and mappings written as tuples (`check_values`)."""
        self._rest = rest
        (
            self.id, self.severity, self.origin, self.error_class, self._params, versions, self.stage, self.order,
            self.scope, after, self.stops, self.any_model, self.inkling_only, self.when, self.condition,
        ) = values  # fmt: skip
        self.sglang_versions = list(versions)
        self.after = list(after)

    @property  # type: ignore[override]
    def params(self) -> dict[str, str]:
        """(made a mapping when first read: a check reads the params of the rules that fire)"""
        params = self._params
        if type(params) is not dict:
            params = self._params = dict(params)
        return params

    @params.setter
    def params(self, value: dict[str, str]) -> None:
        self._params = value

    def __getattr__(self, name: str) -> Any:
        # (called only for a field not set yet: the slots set read without it)
        rest = object.__getattribute__(self, "_rest")
        if rest is None or name not in _RULE_FIELD_NAMES:
            raise AttributeError(name)
        whole = rest()
        for field in _RULE_FIELD_NAMES:
            if field not in CHECK_FIELDS:
                object.__setattr__(self, field, getattr(whole, field))
        object.__setattr__(self, "_rest", None)  # (after the fields: another thread reading one meanwhile parses them too)
        return object.__getattribute__(self, name)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        """A whole `Rule` (as `Rule.model_copy`)."""
        copy = object.__new__(Rule)
        for name, _, _ in self.FIELDS:
            object.__setattr__(copy, name, getattr(self, name))
        for name, value in (update or {}).items():
            object.__setattr__(copy, name, value)
        return copy


_RULE_FIELD_NAMES = frozenset(name for name, _, _ in Rule.FIELDS)
# What a check reads of every rule (the plan, coverage, ordering and reporting of what fired
# read the rest, of the rules they report): plain values, none a nested record; in the order
# of `PartialRule`'s values (each a field whose key in the file is its name).
CHECK_NAMES = (
    "id", "severity", "origin", "error_class", "params", "sglang_versions", "stage", "order", "scope", "after", "stops", "any_model",
    "inkling_only", "when", "condition",
)  # fmt: skip
CHECK_FIELDS = frozenset(CHECK_NAMES)


def check_values(rule: Rule) -> tuple[Any, ...]:
    """A whole record's `CHECK_FIELDS` as `PartialRule` reads them (what the artifact holds):
    lists and mappings as tuples (constants of the artifact's module)."""
    out = []
    for name in CHECK_NAMES:
        value = getattr(rule, name)
        out.append(tuple(value.items()) if isinstance(value, dict) else tuple(value) if isinstance(value, list) else value)
    return tuple(out)
