"""The rule file format and the loader that validates every file in `rules/`.

A rule mirrors one error sglang raises (or, for `origin: derived`, one failure sglang
does not check but that crashes or misbehaves later). Its logic is a CEL expression in
the file; this module only validates the file and compiles the expressions. A broken
rule file is reported with its file name and the offending field.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from inkling_compat.engine import cel, cel_tree
from inkling_compat.engine.paths import VARIABLES, check_rule_paths, referenced_paths  # noqa: F401 - VARIABLES, referenced_paths: the rules' vocabulary
from inkling_compat.errors import RuleFileError as InputError
from inkling_compat.inputs.models import SGLANG_VERSIONS

if TYPE_CHECKING:
    from inkling_compat.engine import definitions  # imported where used: a start from the compiled artifact needs none of it

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
SEVERITIES = ("error", "runtime", "warning")
# libyaml's safe loader: the pure-Python one is many times slower on the rule files.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


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


class FixEdit(BaseModel):
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


class FixSpec(BaseModel):
    """A machine-applicable fix: edits to the server config that are determined by the inputs
    (never a choice the user has to make). `safe`: cannot change what is served beyond making
    it load; `unsafe`: changes capacity or behaviour (applied only with --unsafe-fixes)."""

    model_config = ConfigDict(extra="forbid")

    safety: Literal["safe", "unsafe"]
    description: str = Field(description="What the fix does, in words")
    for_each: str | None = Field(None, description="CEL list: the edits are made once per item, bound as `item`")
    when: str | None = Field(None, description="CEL: the fix applies only where true (else it is listed, not applied)")
    edits: list[FixEdit] = Field(min_length=1)

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

    @model_validator(mode="after")
    def _holes_need_items(self) -> "FixSpec":
        if self.for_each is None:
            for edit in self.edits:
                for key in (edit.set, edit.remove, edit.rename, edit.to):
                    if key is not None and "{" in key:
                        raise ValueError(f"key {key!r} has an {{item}} hole but the fix has no for_each")
        return self


class Rule(BaseModel):
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
    order: int = 0
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
        if not _ID.match(value):
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

        return definitions.file_form_schema(super().model_json_schema(*args, **kwargs), _ID.pattern)

    def for_version(self, version: str) -> "Rule | None":
        """The rule as it reads in `version` (a variant merged in), or None if it does not apply."""
        assert self.sglang_versions is not None
        if version in self.sglang_versions:
            return self
        for variant in self.variants:
            if version in variant.sglang_versions:
                overrides = variant.model_dump(exclude_none=True, exclude={"sglang_versions", "examples"})
                if variant.examples is not None:
                    overrides["examples"] = variant.examples
                if variant.source is not None:
                    overrides["source"] = variant.source
                return self.model_copy(update=dict(overrides, sglang_versions=list(variant.sglang_versions), variants=[]))
        return None


# A hole's conversion: Python's own (`!s` str, `!r` repr) or `!j`, the value as JSON writes
# it (the spelling of the user's file: `NaN`, `true`; engine/evaluate.py).
CONVERSIONS = (None, "s", "r", "j")
# A param that is a plain variable path (`adapter_facts.pool_fit.weight`), or `first(...)` of
# such paths (the first that is not null), is read from the typed values themselves, not
# through CEL: an int keeps every digit (CEL's ints are 64-bit).
_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
_PLAIN_PATH = re.compile(rf"^{_PATH}$")
_FIRST = re.compile(rf"^first\(\s*({_PATH}(?:\s*,\s*{_PATH})*)\s*\)$")


def plain_paths(expression: str) -> tuple[tuple[str, ...], ...] | None:
    """The variable paths a param names, in order (None: it is an expression)."""
    text = expression.strip()
    found = _FIRST.match(text)
    texts = [t.strip() for t in found.group(1).split(",")] if found else [text] if _PLAIN_PATH.match(text) else []
    paths = tuple(tuple(t.split(".")) for t in texts)
    return paths if paths and all(p[0] in VARIABLES for p in paths) else None


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




class CompiledRule:
    """A validated rule with its CEL programs compiled once."""

    __slots__ = (
        "rule", "expression", "when_program", "condition_program", "_program", "_param_programs", "exact_params", "file",
        "paths", "cel_paths", "when_paths", "gate_paths", "fields", "when_conjuncts", "_versions", "_programs",
    )

    def __init__(self, rule: Rule, file: str, programs: "dict[str, Any] | None" = None, analyses: "cel_tree.Analyses | None" = None):
        """`programs` and `analyses`: the compiled programs and the parse-tree readings of the
        rule set being built, by text, shared by its rules (a fifth of the expressions are the
        same text: a variant's `when`, the same `params` hole); a program is read-only
        (`execute(context)`)."""
        self.rule = rule
        self.file = file
        self._programs = programs if programs is not None else {}
        analyses = analyses if analyses is not None else cel_tree.Analyses()
        self._versions: dict[str, CompiledRule | None] = {v: self for v in rule.sglang_versions or ()}
        self.expression = f"({rule.when}) && ({rule.condition})"
        # `when` and `condition` are compiled apart: the engine runs the `when` once per guard
        # group (engine/evaluator.py) and, where it held, the condition alone; CEL's compile
        # grows faster than the text, so two parts cost less than the joined text (figures in
        # docs/performance.md). The joined program
        # is compiled when first needed (a `when` that fails or is not a bool). Two parts that
        # compile join into one that compiles, unless a `//` comment runs on into `) && (`:
        # then the joined text is compiled here too, so a broken rule still fails at load.
        self.when_program = self._compile(rule.when.strip(), "when/condition")
        self.condition_program = self._compile(rule.condition, "when/condition")
        self._program = self._compile(self.expression, "when/condition") if "//" in self.expression else None
        # Params are read only for a rule that fires: their programs are compiled then (a
        # param that does not compile is refused when the rule set is built: `compile_all`).
        self._param_programs: dict[str, Any] | None = None
        self.exact_params = {name: paths for name, paths in ((n, plain_paths(e)) for n, e in rule.params.items()) if paths is not None}
        expressions = [e for name, e in rule.params.items() if name not in self.exact_params]
        try:
            self.when_paths = referenced_paths(rule.when, analyses)
            # What may keep the rule from firing when it reads a placeholder (engine/coverage.py).
            self.gate_paths = self.when_paths | referenced_paths(rule.condition, analyses)
            self.cel_paths = self.gate_paths.union(*(referenced_paths(e, analyses) for e in expressions))
            # Every `.name` the expressions read (engine/plan.py `item_keys`).
            self.fields = frozenset().union(*(analyses.get(e).fields for e in (rule.when, rule.condition, *rule.params.values())))
            # The guard's `&&` operands (engine/guards.py).
            self.when_conjuncts = analyses.get(rule.when.strip()).conjuncts
        except ValueError as exc:  # (compiled by CEL, yet engine/cel_tree.py cannot parse it)
            raise InputError(file, "when/condition", f"cannot tell what it reads: {exc}") from None
        # Everything the rule reads (coverage; the load-time path check): the CEL context
        # holds only `cel_paths`, the exact params are read from the typed values.
        self.paths = self.cel_paths.union(*self.exact_params.values())
        for index, variant in enumerate(rule.variants):
            merged = rule.for_version(variant.sglang_versions[0])
            assert merged is not None
            compiled = CompiledRule(merged, f"{file} (variants[{index}])", self._programs, analyses)
            for version in variant.sglang_versions:
                self._versions[version] = compiled

    @property
    def program(self) -> Any:
        """`(when) && (condition)` compiled: what the rule fires on."""
        if self._program is None:
            self._program = self._compile(self.expression, "when/condition")
        return self._program

    @property
    def param_programs(self) -> dict[str, Any]:
        """The params that are CEL expressions, compiled (on first use)."""
        if self._param_programs is None:
            self._param_programs = {
                name: self._compile(expr, f"params.{name}") for name, expr in self.rule.params.items() if name not in self.exact_params
            }
        return self._param_programs

    def compile_all(self) -> None:
        """Every program of the rule and its variants compiled now (a rule set built from
        files: a broken expression fails at load, not when the rule first fires)."""
        self.param_programs
        for compiled in self._versions.values():
            if compiled is not None and compiled is not self:
                compiled.compile_all()

    def _compile(self, expression: str, field: str) -> Any:
        program = self._programs.get(expression)
        if program is None:
            try:
                program = self._programs[expression] = cel.compile(expression)
            except ValueError as exc:
                first = str(exc).splitlines()[0]
                raise InputError(self.file, field, f"CEL does not compile: {first}") from None
        return program

    def for_version(self, version: str) -> "CompiledRule | None":
        """This rule as compiled for `version`: itself, a variant, or None (not in that version)."""
        return self._versions.get(version)

    @property
    def pattern(self) -> "re.Pattern[str]":
        """`message_pattern` compiled. Only `explain` and the tests match log text, so the
        regexes are compiled on first use instead of at every start;
        tests/test_rule_loading.py compiles every rule's and variant's pattern."""
        try:
            return _pattern(self.rule.message_pattern)
        except re.error as exc:
            raise InputError(self.file, "message_pattern", f"not a valid regex: {exc}") from None


@lru_cache(maxsize=512)
def _pattern(text: str) -> "re.Pattern[str]":
    return re.compile(text)


def rules_dir() -> Path:
    return Path(str(resources.files("inkling_compat.rules")))


def rule_files(folder: Path | None = None) -> list[Path]:
    """Every rule file: `rules/<sglang component>/<rule id>.yaml` (files starting with `_` hold
    shared definitions, not rules)."""
    folder = folder or rules_dir()
    return sorted((p for p in folder.rglob("*.yaml") if not p.name.startswith("_")), key=lambda p: p.name)


def load_rule_file(path: Path, defs: "definitions.Definitions | None" = None) -> CompiledRule:
    """One rule file, its family and guards expanded (`defs`: those of the folder it is in)."""
    from inkling_compat.engine import definitions

    data, origins = _expanded(path, defs)
    if definitions.FOLLOWS in data:  # what it follows is in other files: the folder's expansion
        folder = _rules_root(path)
        data, origins = {p.name: d for p, d in _expanded_folder(folder, defs or _definitions(str(folder)))}[path.name]
    for key in definitions.PRIVATE:
        data.pop(key, None)
    compiled = _validated(data, origins, path.name, path.stem)
    compiled.compile_all()  # (a file loaded alone fails at load, as a folder does)
    return compiled


def _expanded_folder(folder: Path, defs: "definitions.Definitions") -> list[tuple[Path, tuple[dict[str, Any], dict[str, str]]]]:
    """Every rule file of `folder` expanded, each family's `follows` written out."""
    from inkling_compat.engine import definitions

    expanded = [(path, _expanded(path, defs)) for path in rule_files(folder)]
    definitions.resolve_follows({path.stem: data for path, (data, _) in expanded}, defs, {path.stem: path.name for path, _ in expanded})
    return expanded


def _expanded(path: Path, defs: "definitions.Definitions | None") -> tuple[dict[str, Any], dict[str, str]]:
    """A rule file's data as `Rule` reads it (family merged, guards written out) and, per field
    that came from a family, the family's file."""
    from inkling_compat.engine import definitions

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise InputError(path.name, "(yaml)", f"malformed YAML: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise InputError(path.name, "(root)", "a rule file must be a mapping")
    if defs is None:
        defs = _definitions(str(_rules_root(path)))
    return definitions.expand(data, path.name, defs)


def _validated(
    data: dict[str, Any], origins: dict[str, str], name: str, stem: str, programs: "dict[str, Any] | None" = None, analyses: "cel_tree.Analyses | None" = None
) -> CompiledRule:
    """The expanded data of one rule file validated and its CEL compiled."""
    try:
        rule = Rule.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        file = origins.get(str(err["loc"][0]), name) if err["loc"] else name  # a family's value
        raise InputError(file, field, err["msg"]) from None
    if stem != rule.id:
        raise InputError(name, "id", f"file name must be the rule id ({rule.id}.yaml)")
    return CompiledRule(rule, name, programs, analyses)


@lru_cache(maxsize=4)
def load_rules(directory: str | None = None) -> tuple[CompiledRule, ...]:
    """Every rule in `rules/` (or `directory`), validated and compiled, in sglang's check order.

    The package's own rules come from the compiled artifact (engine/compiled_rules.py) when it is
    current, each still validated and its CEL compiled; any other folder, or a stale artifact,
    is compiled from its files."""
    from inkling_compat.engine import compiled_rules

    folder = Path(directory) if directory else rules_dir()
    stored = compiled_rules.load(folder) if folder == rules_dir() else None
    if stored is not None:
        entries, known = stored
        programs: dict[str, Any] = {}
        analyses = cel_tree.Analyses(known)
        compiled = [_validated(data, {}, name, name[: -len(".yaml")] if name.endswith(".yaml") else name, programs, analyses) for name, data in entries]
        _check_after(compiled)
    else:
        compiled, _ = compile_folder(folder)
    in_stage_order = sorted(compiled, key=lambda c: (STAGES.index(c.rule.stage), c.rule.order, c.rule.id))
    return dependency_order(in_stage_order)


def compile_folder(folder: Path) -> tuple[list[CompiledRule], list[tuple[str, dict[str, Any]]]]:
    """The rules of `folder` compiled from their files with every load-time check, and the
    expanded data of each (file name, data): what the compiled artifact holds."""
    # Imported here: a start from the compiled artifact needs neither module.
    from inkling_compat.engine import definitions
    from inkling_compat.engine.paths import check_rule_paths

    defs = definitions.load_definitions(folder)
    expanded = _expanded_folder(folder, defs)
    programs: dict[str, Any] = {}
    analyses = cel_tree.Analyses()
    compiled = [_validated(data, origins, path.name, path.stem, programs, analyses) for path, (data, origins) in expanded]
    for c in compiled:
        c.compile_all()
    _check_after(compiled)
    check_rule_paths(compiled)  # a misspelt fact or input path is refused here, not read as null
    dependency_order(compiled)  # a cycle is refused here too
    return compiled, [(path.name, data) for path, (data, _) in expanded]


def _check_after(compiled: list[CompiledRule]) -> None:
    known = {c.rule.id for c in compiled}
    for c in compiled:
        for dep in c.rule.after:
            if dep not in known:
                raise InputError(c.file, "after", f"unknown rule id {dep!r}")


@lru_cache(maxsize=4)
def _definitions(folder: str) -> "definitions.Definitions":
    from inkling_compat.engine import definitions

    return definitions.load_definitions(Path(folder))


def _rules_root(path: Path) -> Path:
    """The rules folder a rule file belongs to: the nearest folder above it with a guards
    file, else the folder above its component folder (rules/<component>/<id>.yaml)."""
    for folder in path.resolve().parents:
        if (folder / "_guards.yaml").is_file():  # definitions.GUARDS_FILE (not imported for this)
            return folder
    return path.resolve().parent.parent


def dependency_order(rules: list[CompiledRule]) -> tuple[CompiledRule, ...]:
    """Stage order, except that a rule comes after every rule in its `after` list, so the
    engine knows whether those fired when it reaches it. Reports are re-sorted by stage."""
    by_id = {c.rule.id: c for c in rules}
    placed: dict[str, CompiledRule] = {}
    visiting: set[str] = set()

    def place(c: CompiledRule) -> None:
        if c.rule.id in placed:
            return
        if c.rule.id in visiting:
            raise InputError(c.file, "after", "rules depend on each other in a cycle")
        visiting.add(c.rule.id)
        for dep in c.rule.after:
            place(by_id[dep])
        visiting.discard(c.rule.id)
        placed[c.rule.id] = c

    for c in rules:
        place(c)
    return tuple(placed.values())
