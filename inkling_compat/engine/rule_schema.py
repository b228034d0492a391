"""The rule file format: the pydantic models a rule file is validated against (`Rule`, its
variants, fixes and examples) and the message-template holes. It validates rule files where
they are compiled (engine/rule_load.py `compile_folder`, publishing, tests); a check reads the
compiled artifact into engine/rule_record.py's plain classes.

A rule mirrors one error sglang raises (or, for `origin: derived`, one failure sglang
does not check but that crashes or misbehaves later). Its logic is a CEL expression in
the file; engine/rule_compile.py compiles it, engine/rule_load.py reads the files.
"""

from __future__ import annotations

import re
import string
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from inkling_compat.engine.rule_record import STAGES, FixEditReading, FixSpecReading, RuleReading
from inkling_compat.inputs.models import SGLANG_VERSIONS

SEVERITIES = ("error", "runtime", "warning")
ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    line: int | None = Field(None, description="Line in the sglang 0.5.23 wheel")
    function: str | None = None
    commit: str | None = Field(None, description="Pinned upstream commit of the documented text")
    commit_line: int | None = None


class Join(BaseModel):
    """sglang collects several problems into one exception (`initialize_lora`)."""

    model_config = ConfigDict(extra="forbid")

    group: str
    prefix: str
    separator: str = "; "


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str
    input: dict[str, Any]
    message: str | None = Field(None, description="Exact text expected for a firing example")


class Examples(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fire: list[Example] = Field(min_length=1)
    pass_: list[Example] = Field(alias="pass", min_length=1)


class Variant(BaseModel):
    """How the rule reads in other sglang versions: the fields given replace the rule's own.

    One id per error condition across versions, so a user's suppressions and CI filters
    keep working when they move between versions; only the wording or condition changes.
    """

    model_config = ConfigDict(extra="forbid")

    sglang_versions: list[str] = Field(min_length=1)
    message: str | None = None
    message_pattern: str | None = None
    params: dict[str, str] | None = None
    error_class: str | None = None
    when: str | None = None
    condition: str | None = None
    source: Source | None = None
    explanation: str | None = None
    fixes: list[str] | None = Field(None, min_length=1, description="Where the fix reads otherwise (a flag that release spells differently)")
    examples: Examples | None = Field(None, description="Run with check(..., sglang_version=<first of sglang_versions>)")

    @field_validator("sglang_versions")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in SGLANG_VERSIONS]
        if unknown:
            raise ValueError(f"unknown sglang version(s) {unknown}; known: {list(SGLANG_VERSIONS)}")
        return value


_KEY = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|\{item(?:\.[A-Za-z_][A-Za-z0-9_]*)*\})(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|\{item(?:\.[A-Za-z_][A-Za-z0-9_]*)*\}))*$")


class FixEdit(FixEditReading, BaseModel):
    """One change to the server config: `set` a key to a value, `remove` a key, or `rename`
    a key `to` another. Keys are ServerConfig paths (`lora_backend`, `env.SGLANG_X`); under a
    fix's `for_each`, a key may be an `{item...}` hole (the item's value, e.g. `{item.key}`)."""

    model_config = ConfigDict(extra="forbid")

    set: str | None = Field(None, description="Key to set (added where the file lacks it)")
    value: str | None = Field(None, description="CEL: the value `set` writes")
    remove: str | None = Field(None, description="Key to remove (sglang's default applies)")
    rename: str | None = Field(None, description="Key to rename (its value kept)")
    to: str | None = Field(None, description="The key `rename` gives it")
    when: str | None = Field(None, description="CEL: this edit only where true")

    @model_validator(mode="after")
    def _one_kind(self) -> "FixEdit":
        kinds = [k for k in ("set", "remove", "rename") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("an edit is exactly one of set, remove, rename")
        if (self.set is None) != (self.value is None):
            raise ValueError("`value` goes with `set`, and `set` needs one")
        if (self.rename is None) != (self.to is None):
            raise ValueError("`to` goes with `rename`, and `rename` needs one")
        for key in (self.set, self.remove, self.rename, self.to):
            if key is not None and not _KEY.match(key):
                raise ValueError(f"key {key!r} is not a dotted config path (or an {{item...}} hole)")
        return self



class FixSpec(FixSpecReading, BaseModel):
    """A machine-applicable fix: edits to the server config that are determined by the inputs
    (never a choice the user has to make). `safe`: cannot change what is served beyond making
    it load; `unsafe`: changes capacity or behaviour (applied only with --unsafe-fixes)."""

    model_config = ConfigDict(extra="forbid")

    safety: Literal["safe", "unsafe"]
    description: str = Field(description="What the fix does, in words")
    for_each: str | None = Field(None, description="CEL list: the edits are made once per item, bound as `item`")
    when: str | None = Field(None, description="CEL: the fix applies only where true (else it is listed, not applied)")
    edits: list[FixEdit] = Field(min_length=1)

    @model_validator(mode="after")
    def _holes_need_items(self) -> "FixSpec":
        if self.for_each is None:
            for edit in self.edits:
                for key in (edit.set, edit.remove, edit.rename, edit.to):
                    if key is not None and "{" in key:
                        raise ValueError(f"key {key!r} has an {{item}} hole but the fix has no for_each")
        return self


class Rule(RuleReading, BaseModel):
    """One rule file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    title: str
    severity: Literal["error", "runtime", "warning"]
    origin: Literal["sglang", "derived", "argparse", "inkling-compat"]
    error_class: str
    message: str = Field(description="sglang's exact message template; {name} holes bind to params")
    message_pattern: str = Field(description="Regex matching the text sglang raises")
    params: dict[str, str] = Field(default_factory=dict, description="hole -> CEL expression")
    join: Join | None = None
    source: Source | None = None
    sglang_versions: list[str] | None = Field(
        None, description="Versions the rule applies to; default: every known version not taken by a variant"
    )
    variants: list[Variant] = Field(default_factory=list)
    stage: Literal[STAGES]  # type: ignore[valid-type]
    order: int | None = Field(
        None,
        description="Place among the rules of the stage; left out, the rule takes the `order` of the rule before it at "
        "the same sglang function (by source line), so it is needed only where sglang's order is not the source order "
        "(engine/rule_order.py)",
    )
    scope: Literal["global", "adapter", "fleet"] = "global"
    after: list[str] = Field(default_factory=list, description="Evaluated only if these did not fire")
    stops: bool = Field(
        False,
        description="sglang exits where this fires (its argument parsing refused the launch): every rule after it "
        "is not reached, except the checker's own findings about its inputs (origin inkling-compat)",
    )
    any_model: bool = Field(
        False,
        description="The raise site is reached on a base config sglang does not recognize as Inkling, "
        "and the rule reads only fields that config states: it is checked on such a model too",
    )
    inkling_only: bool = Field(
        False,
        description="The raise site is on sglang's Inkling model path only (models/inkling.py, models/inkling_common/, "
        "configs/inkling.py, Inkling's kernels): on a model sglang builds with another class the rule is not applicable; "
        "with no model config read it is not checked, never evaluated on the placeholder model",
    )
    when: str = Field("true", description="CEL: when the check applies")
    condition: str = Field(description="CEL: true when the problem is present")
    field_paths: list[str] = Field(default_factory=list)
    because: str | None = Field(
        None,
        description="For a bare `assert` (sglang prints no text): the failed condition with its values, "
        "a template over `params` (e.g. 'num_attention_heads {heads} is not divisible by the attention TP size {tp}')",
    )
    explanation: str
    fixes: list[str] = Field(min_length=1)
    fix_hint: str | None = Field(
        None, description="A fix written from the params (a template like `message`; shown first when it is not empty)"
    )
    fix: FixSpec | None = Field(None, description="The machine-applicable fix, where one is determined by the inputs (check --fix)")
    examples: Examples
    references: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _kebab(cls, value: str) -> str:
        if not ID.match(value):
            raise ValueError("must be kebab-case (a-z, 0-9, '-')")
        return value

    @model_validator(mode="after")
    def _one_model_scope(self) -> "Rule":
        if self.inkling_only and self.any_model:
            raise ValueError("inkling_only and any_model exclude each other: the site is reached on Inkling models only, or on any model")
        return self

    @model_validator(mode="after")
    def _holes_have_params(self) -> "Rule":
        holes = template_fields(self.message) | template_fields(self.error_class) | template_fields(self.because or "") | template_fields(self.fix_hint or "")
        missing = sorted(holes - set(self.params))
        if missing:
            raise ValueError(f"message holes without params: {missing}")
        if not self.message and not self.because and self.origin != "inkling-compat":
            # sglang prints only the class (a bare `assert`): the report must say what failed.
            raise ValueError("an empty message (a bare assert) needs `because`: the failed condition with its values")
        for variant in self.variants:
            message = variant.message if variant.message is not None else self.message
            params = variant.params if variant.params is not None else self.params
            missing = sorted(template_fields(message) - set(params))
            if missing:
                raise ValueError(f"variant {variant.sglang_versions}: message holes without params: {missing}")
        return self

    @model_validator(mode="after")
    def _versions(self) -> "Rule":
        taken: list[str] = [v for variant in self.variants for v in variant.sglang_versions]
        if len(taken) != len(set(taken)):
            raise ValueError("a version appears in two variants")
        if self.sglang_versions is None:
            self.sglang_versions = [v for v in SGLANG_VERSIONS if v not in taken]
        unknown = [v for v in self.sglang_versions if v not in SGLANG_VERSIONS]
        if unknown:
            raise ValueError(f"unknown sglang version(s) {unknown}; known: {list(SGLANG_VERSIONS)}")
        both = sorted(set(self.sglang_versions) & set(taken))
        if both:
            raise ValueError(f"version(s) {both} are both the rule's own and a variant's")
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema of a rule *file*: this model's fields plus the load-time forms
        (`guards`, `family`; engine/definitions.py), which the loader expands away."""
        from inkling_compat.engine import definitions

        return definitions.file_form_schema(super().model_json_schema(*args, **kwargs), ID.pattern)


# A hole's conversion: Python's own (`!s` str, `!r` repr) or `!j`, the value as JSON writes
# it (the spelling of the user's file: `NaN`, `true`; engine/evaluate.py).
CONVERSIONS = (None, "s", "r", "j")


def template_fields(template: str) -> set[str]:
    """Placeholder names of a message template (plain names only: no attribute access)."""
    names = set()
    for _, field, _, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier():
            raise ValueError(f"placeholder {{{field}}} must be a plain name")
        if conversion not in CONVERSIONS:
            raise ValueError(f"placeholder {{{field}!{conversion}}}: the conversion must be !s, !r or !j")
        names.add(field)
    return names
