"""CEL expressions translated into Python source, at generate time: the rules' Python forms
(inkling_compat/data/rules_python.py, written by `python -m inkling_compat.publish.rules_python`).

`translate(text)` reads the parse tree of engine/cel_tree.py and writes one Python expression
of `v` (the variables dict) built from the helpers of engine/cel_forms.py, each of which returns
exactly CEL's value or raises; or raises `Untranslated` (with the reason) for anything outside
the subset the helpers answer: such a text is left to CEL. The subset: null, bool, int (64-bit)
and double literals, strings without escapes, lists, maps of string keys; variables and field
selection; indexing; the operators (`&&`, `||`, `!`, `?:`, `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`,
`+`, `-`, `*`, `/`, `%`); `size`, `has`, `string`, `type(x) == <type name>`, `startsWith`,
`endsWith`, `contains`, `matches` (a subset of patterns, checked when run); the macros `exists`,
`all`, `exists_one`, `map`, `filter`; and the functions engine/context.py adds to every context.
"""

from __future__ import annotations

from inkling_compat.engine import cel_tree
from inkling_compat.engine.cel_tree import Call, Group, Ident, Index, Literal, Node, Select

_INT_MAX = (1 << 63) - 1
_PER_ADAPTER = ("adapter", "adapter_facts")  # (the variables a check without adapters does not define)
_TYPE_NAMES = frozenset({"null_type", "bool", "int", "double", "string", "list", "map"})
_COMPARE = {"_==_": "eq", "_!=_": "ne", "_<_": "lt", "_<=_": "le", "_>_": "gt", "_>=_": "ge", "@in": "in_"}
_ARITHMETIC = {"_+_": "add", "_-_": "sub", "_*_": "mul", "_/_": "div", "_%_": "mod"}
_METHODS = {"startsWith": "starts", "endsWith": "ends", "contains": "contains", "matches": "matches"}
_MACROS = {"exists": "exists", "all": "all_", "exists_one": "exists_one", "map": "map_", "filter": "filter_"}
# engine/context.py's functions: name -> (helper, how many arguments; None: any)
_FUNCTIONS = {"pytype": ("pytype", 1), "pysorted": ("pysorted", 1), "join": ("join", 2), "pyset": ("pyset", 1), "first": ("first", None), "unknown_keys_text": ("unknown_keys", 1)}
HELPERS = tuple(sorted({"plain", "cond", "not_", "neg", "var", "and_", "or_", "index", "size", "has", "string", "type_name", *_COMPARE.values(), *_ARITHMETIC.values(), *_METHODS.values(), *_MACROS.values(), *(f for f, _ in _FUNCTIONS.values())}))


class Untranslated(ValueError):
    """Outside the translated subset (the reason): CEL evaluates it."""


def translate(text: str) -> str:
    """One Python expression of `v` with CEL's value of `text`, or an exception (module docstring)."""
    try:
        root = cel_tree.parse(text)
    except ValueError as exc:
        raise Untranslated(f"not parsed: {exc}") from None
    body = _Writer().node(root, {})
    return body if _scalar(root) else f"plain({body})"


def _scalar(node: Node) -> bool:
    """Whether `node`'s value is never a list or map (its result needs no conversion)."""
    if isinstance(node, Literal):
        return True
    if isinstance(node, Call) and node.target is None and node.function in (*_COMPARE, "_&&_", "_||_", "!_", "size", "has", "string", "pytype", "join", "pyset", "unknown_keys_text"):
        return True
    return isinstance(node, Call) and node.target is not None and node.function in ("size", *_METHODS, "exists", "all", "exists_one")


class _Writer:
    def node(self, node: Node, bound: dict[str, str]) -> str:
        if isinstance(node, Literal):
            return _literal(node.text)
        if isinstance(node, Ident):
            if node.name in bound:
                return bound[node.name]
            if node.name in _TYPE_NAMES or node.name in ("dyn", "uint", "bytes", "type"):
                raise Untranslated(f"the type name {node.name} as a value")
            if node.name in _PER_ADAPTER:  # (undefined in a check without adapters: CEL's error, for certain)
                return f"var(v, {node.name!r})"
            return f"v[{node.name!r}]"
        if isinstance(node, Select):
            # A str key: anything but a dict raises (TypeError), a missing key KeyError.
            return f"{self.node(node.operand, bound)}[{node.field!r}]"
        if isinstance(node, Index):
            return f"index({self.node(node.operand, bound)}, {self.node(node.index, bound)})"
        if isinstance(node, Group):
            return self.group(node, bound)
        if isinstance(node, Call):
            return self.call(node, bound)
        raise Untranslated(f"a {type(node).__name__}")

    def group(self, node: Group, bound: dict[str, str]) -> str:
        if node.kind == "list":
            items = [self.node(item, bound) for item in node.items]
            if node.items and all(isinstance(item, Literal) for item in node.items):  # (one constant: every helper takes a tuple as a list)
                return "(" + ", ".join(items) + ",)"
            return "[" + ", ".join(items) + "]"
        if node.kind == "map":
            pairs = []
            for key, value in zip(node.items[::2], node.items[1::2]):
                if not (isinstance(key, Literal) and key.text[:1] in ("'", '"')):
                    raise Untranslated("a map key that is not a string literal")
                pairs.append(f"{_literal(key.text)}: {self.node(value, bound)}")
            return "{" + ", ".join(pairs) + "}"
        raise Untranslated("a message literal")

    def call(self, node: Call, bound: dict[str, str]) -> str:
        name, args = node.function, node.args
        if node.target is None:
            if name in ("_&&_", "_||_"):
                # In order, as Python's `and`/`or`: a false (true) operand decides, as in CEL;
                # an operand that raises raises (CEL's answer may be decided by a later operand,
                # `error && false` is false: CEL gives it).
                operands = self._chain(node, name)
                if any(_reads_per_adapter(o, bound) for o in operands):  # (an operand may be an `Error`, which a false one absorbs)
                    helper = "and_" if name == "_&&_" else "or_"
                    return f"{helper}(" + ", ".join(f"lambda: {self.node(o, bound)}" for o in operands) + ")"
                joiner = " and " if name == "_&&_" else " or "
                return "(" + joiner.join(f"cond({self.node(o, bound)})" for o in operands) + ")"
            if name == "_?_:_":
                c, a, b = (self.node(x, bound) for x in args)
                return f"({a} if cond({c}) else {b})"
            if name == "!_":
                return f"not_({self.node(args[0], bound)})"
            if name == "-_":
                operand = args[0]
                if isinstance(operand, Literal) and operand.text.isdigit():
                    return repr(-_number(operand.text))
                return f"neg({self.node(operand, bound)})"
            if name in ("_==_", "_!=_"):
                typed = self._type_test(args, bound)
                if typed is not None:
                    return f"({typed[0]} {'==' if name == '_==_' else '!='} {typed[1]!r})"
            if name in _COMPARE or name in _ARITHMETIC:
                helper = _COMPARE.get(name) or _ARITHMETIC[name]
                return f"{helper}({self.node(args[0], bound)}, {self.node(args[1], bound)})"
            if name == "size" and len(args) == 1:
                return f"size({self.node(args[0], bound)})"
            if name == "string" and len(args) == 1:
                return f"string({self.node(args[0], bound)})"
            if name == "has" and len(args) == 1 and isinstance(args[0], Select):
                return f"has({self.node(args[0].operand, bound)}, {args[0].field!r})"
            if name in _FUNCTIONS:
                helper, count = _FUNCTIONS[name]
                if count is not None and len(args) != count:
                    raise Untranslated(f"{name} with {len(args)} arguments")
                return f"{helper}(" + ", ".join(self.node(a, bound) for a in args) + ")"
            raise Untranslated(f"the function {name}")
        target = self.node(node.target, bound)
        if name == "size" and not args:
            return f"size({target})"
        if name in _METHODS and len(args) == 1:
            return f"{_METHODS[name]}({target}, {self.node(args[0], bound)})"
        if name in _MACROS and len(args) == 2 and isinstance(args[0], Ident):
            variable = f"b{len(bound)}_{args[0].name}"  # (a nested macro's variable never shadows an outer one)
            inner = dict(bound, **{args[0].name: variable})
            return f"{_MACROS[name]}({target}, lambda {variable}: {self.node(args[1], inner)})"
        raise Untranslated(f"the method {name} with {len(args)} arguments")

    @staticmethod
    def _chain(node: Node, name: str) -> list[Node]:
        """The operands of an `&&` (or `||`) chain: CEL's are associative, errors included."""
        if isinstance(node, Call) and node.target is None and node.function == name:
            return [o for arg in node.args for o in _Writer._chain(arg, name)]
        return [node]

    def _type_test(self, args: tuple[Node, ...], bound: dict[str, str]) -> "tuple[str, str] | None":
        """`type(x) == int` (either way round): (CEL's type of x by name, the name)."""
        for call, other in (args, args[::-1]):
            if isinstance(call, Call) and call.target is None and call.function == "type" and len(call.args) == 1:
                if isinstance(other, Ident) and other.name in _TYPE_NAMES and other.name not in bound:
                    return f"type_name({self.node(call.args[0], bound)})", other.name
                raise Untranslated("type() compared with what is not a type name")
        return None


def _reads_per_adapter(node: Node, bound: dict[str, str]) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Ident) and item.name in _PER_ADAPTER and item.name not in bound:
            return True
        stack.extend(cel_tree.children(item))
    return False


def _number(text: str) -> "int | float":
    if text.isdigit():
        value = int(text)
        if value > _INT_MAX:
            raise Untranslated(f"an int literal beyond 64 bits: {text}")
        return value
    if text[:1].isdigit() and all(c in "0123456789.eE+-" for c in text) and any(c in ".eE" for c in text):
        return float(text)
    raise Untranslated(f"the number {text} (hex, uint or another form)")


def _literal(text: str) -> str:
    if text in ("true", "false", "null"):
        return {"true": "True", "false": "False", "null": "None"}[text]
    if text[:1] in ("'", '"'):
        quote = text[0]
        body = text[1:-1]
        if len(text) < 2 or text[-1] != quote or text.startswith(quote * 3) or "\\" in body or quote in body or "\n" in body:
            raise Untranslated("a string literal with escapes, raw or triple quotes")
        return repr(body)
    return repr(_number(text))


def module_source(texts: "list[str]", header: str) -> tuple[str, dict[str, str]]:
    """The generated module's text for `texts` (sorted, each translated once) and the texts
    left to CEL, each with why."""
    lines = [header, "", f"from inkling_compat.engine.cel_forms import {', '.join(HELPERS)}", "", "FORMS = {"]
    untranslated: dict[str, str] = {}
    for text in sorted(set(texts)):
        try:
            body = translate(text)
        except Untranslated as exc:
            untranslated[text] = str(exc)
            continue
        lines.append(f"    {text!r}: lambda v: {body},")
    lines.append("}")
    return "\n".join(lines) + "\n", untranslated
