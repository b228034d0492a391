"""The CEL variables of a check, built from the typed inputs and facts, pruned to what the
rules read (the `Plan`'s path trees): converting values into CEL costs microseconds per
element, far more than evaluating the expressions."""

from __future__ import annotations

from inkling_compat.engine.plan import Plan
from inkling_compat.inputs.record import Record, dump
from inkling_compat.inputs.models import TensorTable

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

_LISTS = ("adapters", "adapter_facts_list")


def python_type_name(value: Any) -> str:
    """`str(type(value))` of the Python object sglang would see, for messages quoting it."""
    return str(type(value))


def python_sorted(values: list[Any]) -> list[Any]:
    return sorted(values)


def join_strings(values: list[Any], separator: str) -> str:
    return separator.join(str(v) for v in values)


def first_not_null(*values: Any) -> Any:
    """The first argument that is not null (null if none is)."""
    return next((v for v in values if v is not None), None)


def python_set_repr(values: list[Any]) -> str:
    """repr() of a Python set of these strings, sorted (a set's own order varies per process)."""
    return "{" + ", ".join(repr(str(v)) for v in sorted(values)) + "}" if values else "set()"


def unknown_keys_text(keys: list[Any]) -> str:
    """`input.unknown_keys` as the unknown-key message lists them ("file: key (did you mean
    x?)", comma-separated). In Python: CEL's `map` over a list is quadratic in its length,
    this is linear (docs/performance.md, "Why the engine's shortcuts")."""
    parts = []
    for k in keys:
        suggestion = k.get("suggestion") or ""
        said = k.get("message") or f"unknown key {k.get('key', '')}"  # (argparse's words where sglang reads the key)
        hint = f" ({k['releases']})" if k.get("releases") else f" (did you mean {suggestion}?)" if suggestion else ""
        parts.append(f"{k.get('file', '')}: {said}{hint}")
    return ", ".join(parts)


def cel_context(variables: dict[str, Any]) -> Any:
    from inkling_compat.engine import cel  # (the fast evaluator's checks mostly never need it: engine/python_first.py)

    ctx = cel.Context()
    # Functions first: adding them after the variables measured slower (docs/performance.md).
    ctx.add_function("pytype", python_type_name)
    ctx.add_function("pysorted", python_sorted)
    ctx.add_function("join", join_strings)
    ctx.add_function("pyset", python_set_repr)
    ctx.add_function("first", first_not_null)
    ctx.add_function("unknown_keys_text", unknown_keys_text)
    try:
        cel.update(ctx, variables)
    except ValueError:
        # A string CEL cannot hold: a file name that is not UTF-8 (lone surrogates) read as text.
        cel.update(ctx, _as_text(variables))
    return ctx


def _as_text(value: Any) -> Any:
    """`value` with every string that is not valid text written with `\\xff` escapes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {_as_text(k): _as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_as_text(v) for v in value)
    return value


def prune(value: Any, tree: dict[Any, Any]) -> Any:
    """Only the parts of `value` that the rules read (whole sub-values at path ends)."""
    if None in tree or not isinstance(value, dict):
        return value
    out = {}
    for key, child in tree.items():
        if key not in value:
            continue  # absent here (e.g. a pool-form key on a PEFT adapter)
        out[key] = prune(value[key], child)
    return out


def adapter_document(manifest: Any, keys: set[str] | None) -> dict[str, Any]:
    """The manifest as the rules see it (`adapter`), with only the top-level `keys` they read
    (all when None): dumping 200+ tensor specs per adapter that no rule reads is most of the
    cost of a large fleet."""
    if keys is None:
        return manifest.model_dump(mode="json")  # type: ignore[no-any-return]
    return manifest.model_dump(mode="json", include=set(keys) & set(type(manifest).__fact_fields__))  # type: ignore[no-any-return]


def _json(value: Any) -> Any:
    """`value` as `model_dump(mode="json")` writes it (scalars are already)."""
    if value is None or type(value) in _PLAIN:
        return value
    if isinstance(value, Record) or (type(value) is list and value and isinstance(value[0], Record)):
        return dump(value)
    if type(value) is TensorTable:
        return value.model_dump(mode="json")
    return jsonable(value)


def jsonable(value: Any) -> Any:
    """pydantic_core's `to_jsonable_python(value)`: the values a document holds (strings, ints,
    bools, floats as they are, None, lists and tuples as lists, dicts with string keys) here,
    anything else (a caller's object, a dict keyed by another type) by pydantic_core itself."""
    out = _jsonable(value)
    if out is _OTHER:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    return out


_OTHER: Any = object()


def _jsonable(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in _PLAIN:
        return value
    if kind is list or kind is tuple:
        items = []
        for item in value:
            item = _jsonable(item)
            if item is _OTHER:
                return _OTHER
            items.append(item)
        return items
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                return _OTHER
            item = _jsonable(item)
            if item is _OTHER:
                return _OTHER
            out[key] = item
        return out
    if isinstance(value, Record):
        return dump(value)
    return _OTHER


_PLAIN = (str, int, bool, float)  # (a float as it is: JSON mode would make NaN and infinities null)


def pick(value: Any, tree: dict[Any, Any]) -> Any:
    """`prune(<value dumped in JSON mode>, tree)`, reading a model's fields along the tree:
    only what the rules read is dumped, so a fleet does not dump every adapter's whole facts
    and manifest to throw most of it away; a one-adapter check costs what a whole dump does."""
    if None in tree:
        return value if value is None or type(value) in _PLAIN else _json(value)
    if isinstance(value, Record):  # a fact or an input record: its fields are its slots
        fields = value.__fact_fields__
        extra = getattr(value, "model_extra", None)  # (an input record's extra keys, where kept)
        out = {}
        for key, child in tree.items():
            if key in fields:
                item = getattr(value, key)
                # Most paths end at a scalar field: no call for those.
                out[key] = item if None in child and (item is None or type(item) in _PLAIN) else pick(item, child)
            elif extra and key in extra:
                out[key] = pick(extra[key], child)
        return out
    # Anything else is dumped as it is (a dict's keys as JSON writes them), then pruned.
    return prune(_json(value), tree)


def _keep_keys(item: Any, keys: frozenset[str]) -> Any:
    return {k: v for k, v in item.items() if k in keys} if isinstance(item, dict) else item


def _adapter_view(manifest: Any, form: str, tree: dict[Any, Any], keys: set[str] | None) -> Any:
    """`prune(dict(adapter_document(manifest, keys), form=form), tree)` without the dump."""
    if None in tree:
        return dict(adapter_document(manifest, keys), form=form)
    fields = type(manifest).__fact_fields__
    out = {}
    for key, child in tree.items():
        if key == "form":
            out[key] = form
        elif key in fields and (keys is None or key in keys):
            out[key] = pick(getattr(manifest, key), child)
    return out


class Contexts:
    """The global context (with the first adapter riding along) and, for the second and later
    adapters, one that holds only what adapter rules read."""

    # The second and later adapters' context, updated per adapter (a CEL context here; the fast
    # evaluator's, engine/evaluator.py `_FastContexts`: engine/python_first.Variables).
    adapter_build = staticmethod(cel_context)

    def __init__(self, inputs: Any, facts: Any, plan: Plan, build: Any = None):
        """`build(variables)`: the global context (engine/evaluator.py: the fast evaluator's
        keeps built contexts; the reference, like the default here, builds each one)."""
        self._inputs, self._facts, self._plan = inputs, facts, plan
        self.facts = facts
        self._adapter_tree = plan.adapter_tree.get("adapter", _WHOLE)
        self._facts_tree = plan.adapter_tree.get("adapter_facts", _WHOLE)
        lists: dict[str, list[Any]] = {}
        for key in _LISTS:  # cross-adapter rules: each item with only the keys they read
            if key in plan.tree:
                lists[key] = [_keep_keys(item, plan.item_keys) for item in self._list(key)]
        shared = self._variables(plan.tree, lists)
        self.adapter_views: list[Any] = [None] * len(facts.adapters)
        if self.adapter_views:
            shared["adapter"], shared["adapter_facts"] = self._view(0)
        self.shared = (build or cel_context)(shared)
        # The CEL context re-converts *every* variable on the first evaluation after an update, so
        # the second and later adapters get a context of their own without the whole-fleet lists
        # (unless an adapter rule reads them): a fleet check stays linear in the number of adapters.
        # (`shared` may be a kept context, shared with other checks: it is never updated.)
        self.per_adapter: Any = None
        self._entries_by_name: dict[Any, list[Any]] | None = None
        self._adapter_base: dict[str, Any] = {}
        self._entries_of_all: dict[Any, list[Any]] | None = None
        if len(self.adapter_views) > 1:
            variables = self._adapter_base = self._variables(plan.adapter_global_tree, lists)
            facts_variable = variables.get("facts")
            if plan.lora_paths_by_name and isinstance(facts_variable, dict) and isinstance(facts_variable.get("lora_paths"), list):
                # Each adapter's context gets the entries of its own name only (engine/plan.py
                # `reads_lora_paths_by_name`): the whole list would be converted again per adapter.
                self._entries_by_name = {}
                for entry in facts_variable["lora_paths"]:
                    self._entries_by_name.setdefault(entry.get("name") if isinstance(entry, dict) else None, []).append(entry)
                self._facts_without_entries = {k: v for k, v in facts_variable.items() if k != "lora_paths"}
                variables["facts"] = dict(self._facts_without_entries, lora_paths=[])
            self.per_adapter = self.adapter_build(variables)

    def _variables(self, tree: dict[Any, Any], lists: dict[str, list[Any]]) -> dict[str, Any]:
        """The CEL variables `tree` reads (`prune(base, tree)` of the whole-dump design)."""
        inputs, facts = self._inputs, self._facts
        server = inputs.server
        sources = {"config": server, "env": server.env, "model": inputs.model, "platform": inputs.platform}
        out: dict[str, Any] = {}
        for name, child in tree.items():
            if name in sources:
                out[name] = pick(sources[name], child)
            elif name == "facts":
                out[name] = _facts_variable(facts, child)
            elif name == "input":
                out[name] = prune(inputs.input_variable(), child)
            elif name in lists:
                out[name] = lists[name]
        return out

    def _list(self, key: str) -> list[Any]:
        inputs, facts, plan = self._inputs, self._facts, self._plan
        if key == "adapters":
            return [dict(adapter_document(m, plan.adapter_keys), form=a.form) for m, a in zip(inputs.adapters, facts.adapters)]
        return [a.model_dump(mode="json") for a in facts.adapters]

    def _view(self, index: int) -> tuple[Any, Any]:
        view = self.adapter_views[index]
        if view is None:
            manifest, af = self._inputs.adapters[index], self._facts.adapters[index]
            view = self.adapter_views[index] = (
                _adapter_view(manifest, af.form, self._adapter_tree, self._plan.adapter_keys),
                pick(af, self._facts_tree),
            )
        return view

    def exact_reader(self, index: int) -> Any:
        """`read(path)`: the value at a variable path for adapter `index`'s rules (-1: the
        global ones, which see the first adapter), read from the typed inputs and facts as
        the context holds it (JSON mode) but without CEL's conversion (an int keeps every
        digit). LookupError where the path leads nowhere (a null on the way, a missing key)."""
        inputs, facts = self._inputs, self._facts
        i = max(index, 0)
        adapter = i < len(facts.adapters)
        server = inputs.server
        roots = {
            "config": lambda: server,
            "env": lambda: server.env,
            "model": lambda: inputs.model,
            "platform": lambda: inputs.platform,
            "facts": lambda: facts,
            "input": lambda: inputs.input_variable(),
        }

        def read(path: tuple[str, ...]) -> Any:
            root, rest = path[0], path[1:]
            if root == "adapter_facts" and adapter:
                value = facts.adapters[i]
            elif root == "adapter" and adapter:
                if rest[:1] == ("form",):
                    value, rest = facts.adapters[i].form, rest[1:]
                else:
                    value = inputs.adapters[i]
            elif root in roots:
                value = roots[root]()
            else:
                raise LookupError(root)
            for name in rest:
                value = _member(value, name)
            return value if value is None or type(value) in _SCALARS else _json(value)

        return read

    def view(self, index: int) -> tuple[Any, Any]:
        """Adapter `index`'s `adapter` and `adapter_facts` as its context holds them (kept until
        `for_adapter(index)` or `drop_view(index)`)."""
        return self._view(index)

    def drop_view(self, index: int) -> None:
        self.adapter_views[index] = None

    def adapter_base(self) -> dict[str, Any]:
        """The variables of the second and later adapters' context that are the same for all
        (what adapter rules read besides the adapter)."""
        return self._adapter_base

    def entries_named(self, name: str) -> list[Any]:
        """The --lora-paths entries (`facts.lora_paths` as the adapter rules see it) whose
        `name` is `name`."""
        if self._entries_by_name is not None:
            return self._entries_by_name.get(name, [])
        if self._entries_of_all is None:  # (every adapter's context holds every entry: indexed once)
            facts_variable = self._adapter_base.get("facts")
            entries = facts_variable.get("lora_paths") if isinstance(facts_variable, dict) else None
            self._entries_of_all = {}
            for entry in entries if isinstance(entries, list) else ():
                self._entries_of_all.setdefault(entry.get("name") if isinstance(entry, dict) else None, []).append(entry)
        return self._entries_of_all.get(name, [])

    def adapter_update(self, index: int) -> dict[str, Any]:
        """What adapter `index`'s context sets over `adapter_base()`: `adapter`, `adapter_facts`
        and, where each adapter gets its own --lora-paths entries, `facts`."""
        doc, af = self._view(index)
        update = {"adapter": doc, "adapter_facts": af}
        if self._entries_by_name is not None:
            name = doc.get("name") if isinstance(doc, dict) else None
            own = self._entries_by_name.get(name, []) if isinstance(name, str) else None
            update["facts"] = dict(self._facts_without_entries, lora_paths=own if own is not None else [e for es in self._entries_by_name.values() for e in es])
        return update

    def for_adapter(self, index: int) -> Any:
        """The context in which adapter `index`'s rules run (after `index - 1`'s)."""
        if index <= 0:
            return self.shared
        update = self.adapter_update(index)
        self.adapter_views[index] = None  # built when its turn comes, dropped after: one at a time
        try:
            self.per_adapter.update(update)
        except ValueError:  # a name that is not UTF-8 (see cel_context)
            self.per_adapter.update(_as_text(update))
        return self.per_adapter


_WHOLE: dict[Any, Any] = {None: True}
_SCALARS = (str, int, bool, float)


def _member(value: Any, name: str) -> Any:
    """`value.name` as `pick` reads it: a record's field (or extra key), a dict's key."""
    if isinstance(value, Record):
        if name in value.__fact_fields__:
            return getattr(value, name)
        extra = getattr(value, "model_extra", None)
        if extra and name in extra:
            return extra[name]
        raise LookupError(name)
    if type(value) is TensorTable:
        value = value.root
    if isinstance(value, dict) and name in value:
        return value[name]
    raise LookupError(name)


def _facts_variable(facts: Any, tree: dict[Any, Any]) -> Any:
    """`facts` without the per-adapter list (that is `adapter_facts` / `adapter_facts_list`)."""
    if None in tree:
        return facts.model_dump(mode="json", exclude={"adapters"})
    return pick(facts, {k: v for k, v in tree.items() if k != "adapters"})
