"""The fast evaluator's programs and contexts: a rule expression runs as its generated Python
form (inkling_compat/data/rules_python.py, and rules_python_params.py for the texts only params
hold; engine/cel_python.py) where it has one, and as its CEL program where it has none or the
form cannot answer.

A form returns exactly CEL's value for the same variables, or raises (engine/cel_forms.py); on
any exception the CEL program is compiled (once), the variables converted into a CEL context
(once per `Variables`) and the program run: its value, or its own error, is the answer. So a
check whose expressions the forms answer neither imports the CEL extension nor compiles nor
converts anything, and an error message is always CEL's. The forms run only on variables of
plain values (str, bool, int within 64 bits, float, None, lists, tuples and dicts with str
keys, all the way down: `is_plain`, decided once per `Variables`); anything else, or a context
that is already CEL's (the identity rules' contexts of alike adapters, engine/alike.py), runs
CEL.
The reference evaluator never comes here: it runs CEL only.
"""

from __future__ import annotations

from inkling_compat.engine.cel_forms import Error, and_

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

_MIN, _MAX = -(1 << 63), (1 << 63) - 1
# The generated modules (engine/cel_python.py): the forms every check runs (guard operands,
# conditions), and those of the params only (read only for a rule that fires: a passing check
# does not load them).
RUN_MODULE, PARAMS_MODULE = "rules_python", "rules_python_params"
_FORMS: "dict[str, Any] | None" = None
_PARAM_FORMS: "dict[str, Any] | None" = None


def forms() -> dict[str, Any]:
    """Expression text -> its Python form (a function of the variables dict): every guard
    operand and condition (`param_forms()`: the texts only params hold)."""
    return _FORMS if _FORMS is not None else load_forms()


def param_forms() -> dict[str, Any]:
    """The forms of the texts that only rules' params hold."""
    return _PARAM_FORMS if _PARAM_FORMS is not None else load_param_forms()


class _NoBytecode(Exception):
    """The generated module has no current bytecode and none may be written."""


def load_forms(source: bool = False) -> dict[str, Any]:
    """The forms of `forms()`, (re)loaded (`_module_forms`)."""
    global _FORMS
    _FORMS = _module_forms(RUN_MODULE, source)
    return _FORMS


def load_param_forms(source: bool = False) -> dict[str, Any]:
    """The forms of `param_forms()`, (re)loaded (`_module_forms`)."""
    global _PARAM_FORMS
    _PARAM_FORMS = _module_forms(PARAMS_MODULE, source)
    return _PARAM_FORMS


def _module_forms(module: str, source: bool) -> dict[str, Any]:
    """The FORMS of a generated module of inkling_compat/data/, run from its bytecode: written
    first where it is missing or stale and may be written (an installed wheel has it: pip
    compiles at install). Where none may be written (PYTHONDONTWRITEBYTECODE), compiling the
    module's source (about 30 ms) costs more than CEL's programs, so there are none (every
    expression runs CEL), unless `source` (the tests: the forms compared with CEL in the sandbox)."""
    import importlib.machinery
    import os
    import sys

    class Loader(importlib.machinery.SourceFileLoader):
        def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> Any:  # type: ignore[override]
            if sys.dont_write_bytecode and not source:
                raise _NoBytecode
            return super().source_to_code(data, path, _optimize=_optimize)

    name = f"inkling_compat.data.{module}"
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", f"{module}.py")
    found: dict[str, Any] = {}
    try:
        code = Loader(name, path).get_code(name)
        namespace: dict[str, Any] = {"__name__": name}
        exec(code, namespace)  # noqa: S102 - the package's own generated module
        if type(namespace.get("FORMS")) is dict:
            found = namespace["FORMS"]
    except (_NoBytecode, OSError, ImportError, SyntaxError):  # (not generated, or no bytecode: CEL runs every expression)
        pass
    return found


def is_plain(value: Any) -> bool:
    """Whether every value in `value` is one the forms take as CEL does (module docstring)."""
    if not _plain_scalar(value):
        return False
    stack = [value] if type(value) in _CONTAINERS else []
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key in item:
                if type(key) is not str or not key.isascii() and not _text(key):
                    return False
            item = item.values()
        for child in item:  # (scalars checked here: most values are, and the stack holds containers only)
            kind = type(child)
            if kind is str:
                if not child.isascii() and not _text(child):
                    return False
            elif kind is dict or kind is list or kind is tuple:
                stack.append(child)
            elif kind is int:
                if not _MIN <= child <= _MAX:
                    return False
            elif not (child is None or kind is bool or kind is float):
                return False
    return True


_CONTAINERS = (dict, list, tuple)


def _plain_scalar(value: Any) -> bool:
    """`value` is a container, or a plain scalar."""
    kind = type(value)
    if kind is str:
        return value.isascii() or _text(value)
    if kind is int:
        return _MIN <= value <= _MAX
    return kind in _CONTAINERS or value is None or kind is bool or kind is float


def _text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # (a lone surrogate: engine/context.py writes it with escapes for CEL)
        return False
    return True


class Variables:
    """A check's variables, with their CEL context built on first need (`cel()`)."""

    __slots__ = ("variables", "plain", "_cel")

    def __init__(self, variables: dict[str, Any]):
        self.variables = variables
        self.plain = is_plain(variables)
        self._cel: Any = None

    def cel(self) -> Any:
        if self._cel is None:
            from inkling_compat.engine.context import cel_context

            self._cel = cel_context(self.variables)
        return self._cel

    def update(self, update: dict[str, Any]) -> None:
        """Some variables replaced (a CEL context's `update`: the next adapter's context of a
        fleet, engine/context.py `Contexts.for_adapter`), its CEL context with them where built."""
        self.variables = {**self.variables, **update}
        self.plain = self.plain and is_plain(update)  # (a value replaced that was not plain: still CEL's, as it may be)
        if self._cel is not None:
            from inkling_compat.engine.context import _as_text

            try:
                self._cel.update(update)
            except ValueError:  # a name that is not UTF-8 (engine/context.py cel_context)
                self._cel.update(_as_text(update))


def cel_of(ctx: Any) -> Any:
    """The CEL context of `ctx` (a `Variables`, or one already CEL's)."""
    return ctx.cel() if type(ctx) is Variables else ctx


UNANSWERED: Any = object()  # (`answer` where the form cannot)


def answer(text: str, ctx: Any) -> Any:
    """The Python form's value of `text` in `ctx`, or `UNANSWERED` where there is none or it raised."""
    if type(ctx) is Variables and ctx.plain:
        form = forms().get(text)
        if form is None:
            form = param_forms().get(text)
        if form is not None:
            try:
                return form(ctx.variables)
            except Exception:  # noqa: BLE001 - the form cannot answer: CEL does
                pass
    return UNANSWERED


class Program:
    """An expression's program for the fast evaluator: `execute(ctx)` as a CEL program's,
    the Python form first; `make()` gives the CEL program (compiled when first needed).

    Where the form raises `cel_forms.Error` (`adapter` read where a check without adapters
    defines none, as CEL evaluates it), CEL's answer is an error too: it is raised without
    CEL. Only whether it is an error is read of it (a guard's operand, a `when`, a condition:
    engine/guards.py, engine/evaluator.py); a rule's error text always comes from CEL."""

    __slots__ = ("source", "form", "make", "_program")

    def __init__(self, source: str, make: Callable[[], Any]):
        self.source, self.make = source, make
        self.form = forms().get(source)
        self._program: Any = None

    def execute(self, ctx: Any) -> Any:
        if type(ctx) is Variables:
            form = self.form
            if form is not None and ctx.plain:
                try:
                    return form(ctx.variables)
                except Error:
                    raise
                except Exception:  # noqa: BLE001 - the form cannot answer: CEL does
                    pass
            ctx = ctx.cel()
        program = self._program
        if program is None:
            program = self._program = self.make()
        return program.execute(ctx)


def joined_program(c: Any) -> Program:
    """A rule's `(when) && (condition)` (a CompiledRule's `program`): its form is that of the
    `&&` of its `when`'s operands and its condition, each by its own form (CEL's `&&` is
    associative and commutative, errors absorbed by a false operand: `cel_forms.and_`), where
    each has one; not where a `//` comment may run on into `) && (` (the joined text means
    something else then)."""
    program = Program(c.expression, lambda: c.program)
    if program.form is None and "//" not in c.expression:
        table = forms()
        parts = [table.get(text) for text in (*(c.when_conjuncts or (c.rule.when.strip(),)), c.rule.condition)]
        if all(part is not None for part in parts):
            program.form = lambda v: and_(*[lambda part=part: part(v) for part in parts])
    return program
