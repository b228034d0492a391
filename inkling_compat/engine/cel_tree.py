"""The parse tree of a CEL expression, for what the engine needs to know about a rule before
running it: the variable paths it reads, the field names it selects, and its top-level `&&`
operands.

The evaluator (engine/cel.py, common-expression-language's Rust core) compiles and runs
expressions but exposes no syntax tree: only the root variable names (`Program.variables()`,
which tests/test_cel_tree.py compares with this parser's on every rule). This module parses
the CEL grammar of the language definition (cel-spec `langdef.md`: conditional, `||`, `&&`,
relations, arithmetic, unary, member selection, index, calls, list/map/message literals and
the literals themselves) into small frozen nodes, each with its span in the source text.
Macros (`has`, `exists`, `all`, `exists_one`, `map`, `filter`) are calls here; `reads` knows
which of their arguments bind a variable. A text the grammar refuses raises `ValueError`, as
the evaluator's compiler does.
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple

# Comprehension macros: `target.<macro>(var, ...)`; `var` is bound in the later arguments.
MACROS = frozenset({"exists", "all", "exists_one", "map", "filter"})

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>[rR]?[bB]?[rR]?(?:\"\"\"(?:[^\\]|\\.)*?\"\"\"|'''(?:[^\\]|\\.)*?'''|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)|[0-9]+[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[-+*/%!<>?:.,\[\](){}])
    """,
    re.VERBOSE | re.DOTALL,
)


# The nodes are plain classes with slots, built once by the parser and never changed: the
# module is imported by every check, and a frozen dataclass costs about 1 ms to define
# (docs/performance.md).
class Node:
    __slots__ = ("start", "end")

    def __init__(self, start: int, end: int):
        self.start, self.end = start, end

    def spanning(self, start: int, end: int) -> "Node":
        """The same node over another span of the text."""
        copy = object.__new__(type(self))
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                setattr(copy, name, getattr(self, name))
        copy.start, copy.end = start, end
        return copy


class Ident(Node):
    __slots__ = ("name",)

    def __init__(self, start: int, end: int, name: str):
        self.start, self.end, self.name = start, end, name


class Literal(Node):
    __slots__ = ("text",)

    def __init__(self, start: int, end: int, text: str):
        self.start, self.end, self.text = start, end, text


class Select(Node):
    __slots__ = ("operand", "field")

    def __init__(self, start: int, end: int, operand: Node, field: str):
        self.start, self.end, self.operand, self.field = start, end, operand, field


class Index(Node):
    __slots__ = ("operand", "index")

    def __init__(self, start: int, end: int, operand: Node, index: Node):
        self.start, self.end, self.operand, self.index = start, end, operand, index


class Call(Node):
    """A function (`target` None), a method or macro (`target.function(args)`), or an operator
    (`function` "_&&_", "_+_", "!_", "_?_:_", ... as CEL names them)."""

    __slots__ = ("target", "function", "args")

    def __init__(self, start: int, end: int, target: Node | None, function: str, args: tuple[Node, ...]):
        self.start, self.end, self.target, self.function, self.args = start, end, target, function, args


class Group(Node):
    """A list (`[a, b]`), a map (`{k: v}`: keys and values in turn) or a message (`T{f: v}`:
    its field values)."""

    __slots__ = ("kind", "items")

    def __init__(self, start: int, end: int, kind: str, items: tuple[Node, ...]):
        self.start, self.end, self.kind, self.items = start, end, kind, items


class _CelParser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int, int]] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"CEL: unexpected character {text[position]!r} at {position}")
            kind = match.lastgroup or ""
            if kind != "space":
                self.tokens.append((kind, match.group(), match.start(), match.end()))
            position = match.end()
        self.at = 0

    # -- tokens -----------------------------------------------------------------------
    def peek(self, offset: int = 0) -> tuple[str, str, int, int]:
        index = self.at + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "", len(self.text), len(self.text))

    def take(self, value: str | None = None) -> tuple[str, str, int, int]:
        token = self.peek()
        if value is not None and token[1] != value:
            raise ValueError(f"CEL: expected {value!r} at {token[2]}, found {token[1] or 'the end'!r}")
        if token[0] == "end":
            raise ValueError("CEL: unexpected end of expression")
        self.at += 1
        return token

    def accept(self, value: str) -> bool:
        if self.peek()[1] == value and self.peek()[0] in ("op", "ident"):
            self.at += 1
            return True
        return False

    # -- grammar ------------------------------------------------------------------------
    def parse(self) -> Node:
        node = self.expr()
        if self.peek()[0] != "end":
            raise ValueError(f"CEL: unexpected {self.peek()[1]!r} at {self.peek()[2]}")
        return node

    def expr(self) -> Node:
        condition = self.binary(0)
        if self.accept("?"):
            then = self.binary(0)
            self.take(":")
            otherwise = self.expr()
            return Call(condition.start, otherwise.end, None, "_?_:_", (condition, then, otherwise))
        return condition

    _LEVELS = (("||",), ("&&",), ("<", "<=", ">=", ">", "==", "!=", "in"), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek()[1] in self._LEVELS[level] and self.peek()[0] in ("op", "ident"):
            op = self.take()[1]
            right = self.binary(level + 1)
            name = "@in" if op == "in" else f"_{op}_"
            node = Call(node.start, right.end, None, name, (node, right))
        return node

    def unary(self) -> Node:
        token = self.peek()
        if token[1] in ("!", "-") and token[0] == "op":
            self.take()
            operand = self.unary()
            return Call(token[2], operand.end, None, f"{token[1]}_", (operand,))
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while True:
            token = self.peek()
            if token[1] == "." and token[0] == "op":
                self.take()
                kind, name, _, end = self.take()
                if kind != "ident":
                    raise ValueError(f"CEL: expected a field name at {token[2]}")
                if self.peek()[1] == "(":
                    args, end = self.arguments(")")
                    node = Call(node.start, end, node, name, args)
                else:
                    node = Select(node.start, end, node, name)
            elif token[1] == "[" and token[0] == "op":
                self.take()
                index = self.expr()
                end = self.take("]")[3]
                node = Index(node.start, end, node, index)
            elif token[1] == "{" and token[0] == "op" and self._names_a_type(node):
                items, end = self.inits(fields=True)
                node = Group(node.start, end, "message", items)
            else:
                return node

    @staticmethod
    def _names_a_type(node: Node) -> bool:
        while isinstance(node, Select):
            node = node.operand
        return isinstance(node, Ident)

    def arguments(self, close: str) -> tuple[tuple[Node, ...], int]:
        self.take("(" if close == ")" else "[")
        args: list[Node] = []
        while self.peek()[1] != close:
            args.append(self.expr())
            if not self.accept(","):
                break
        return tuple(args), self.take(close)[3]

    def inits(self, fields: bool) -> tuple[tuple[Node, ...], int]:
        self.take("{")
        items: list[Node] = []
        while self.peek()[1] != "}":
            if fields:
                if self.take()[0] != "ident":
                    raise ValueError("CEL: expected a field name in a message literal")
            else:
                items.append(self.expr())
            self.take(":")
            items.append(self.expr())
            if not self.accept(","):
                break
        return tuple(items), self.take("}")[3]

    def primary(self) -> Node:
        kind, value, start, end = self.peek()
        if value == "." and kind == "op":  # a name from the root scope: `.name`
            self.take()
            kind, value, _, end = self.peek()
            if kind != "ident":
                raise ValueError(f"CEL: expected a name after '.' at {start}")
        if kind == "ident":
            self.take()
            if value in ("true", "false", "null"):
                return Literal(start, end, value)
            if self.peek()[1] == "(":
                args, end = self.arguments(")")
                return Call(start, end, None, value, args)
            return Ident(start, end, value)
        if kind in ("string", "number"):
            self.take()
            return Literal(start, end, value)
        if value == "(":
            self.take()
            node = self.expr()
            close = self.take(")")[3]
            return node.spanning(start, close)  # (its text keeps the parentheses)
        if value == "[":
            args, end = self.arguments("]")
            return Group(start, end, "list", args)
        if value == "{":
            items, end = self.inits(fields=False)
            return Group(start, end, "map", items)
        raise ValueError(f"CEL: unexpected {value or 'end of expression'!r} at {start}")


def parse(expression: str) -> Node:
    """The parse tree of `expression`."""
    return _CelParser(expression).parse()


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Select):
        return (node.operand,)
    if isinstance(node, Index):
        return (node.operand, node.index)
    if isinstance(node, Call):
        return ((node.target,) if node.target is not None else ()) + node.args
    if isinstance(node, Group):
        return node.items
    return ()


def _chain(node: Node, bound: frozenset[str]) -> tuple[str, ...] | None:
    """`facts.sink.sink_class` -> ("facts", "sink", "sink_class"); None unless `node` is a
    selection chain from a name that no comprehension binds here."""
    fields: list[str] = []
    while isinstance(node, Select):
        fields.append(node.field)
        node = node.operand
    if isinstance(node, Ident) and node.name not in bound:
        return (node.name, *reversed(fields))
    return None


def _chains(node: Node, bound: frozenset[str]) -> Iterator[tuple[str, ...]]:
    path = _chain(node, bound)
    if path is not None:  # the longest selection chain: what is read, whole
        yield path
        return
    if isinstance(node, Call) and node.target is not None and node.function in MACROS and node.args and isinstance(node.args[0], Ident):
        yield from _chains(node.target, bound)
        inner = bound | {node.args[0].name}
        for arg in node.args[1:]:
            yield from _chains(arg, inner)
        return
    for child in children(node):
        yield from _chains(child, bound)


def _fields(root: Node) -> set[str]:
    out: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, Select):
            out.add(node.field)
        stack.extend(children(node))
    return out


def _conjuncts(expression: str, root: Node) -> tuple[str, ...]:
    out: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, Call) and node.function == "_&&_":
            stack.extend(reversed(node.args))
        else:
            out.append(expression[node.start : node.end])
    return tuple(out)


class Analysis(NamedTuple):
    """What the engine reads off one expression's parse tree.

    `chains`: each selection chain from a free name (`facts.sink.sink_class`; a method call, an
    index or a macro reads the value it is applied to, whole; a comprehension's own variable is
    not free inside it). `fields`: every field name selected anywhere (`a.name` -> "name"): the
    keys a list item may need when the expression walks a list. `conjuncts`: the operands of
    the top-level `&&` chain as source text (`&&` is associative in CEL, errors included, so
    parentheses around an `&&` chain do not stop it); the whole text when the root is not an
    `&&`. `loose`: the root is an `||` or a `?:`, which bind looser than `&&` (an operand of
    `&&` must then be parenthesized)."""

    chains: frozenset[tuple[str, ...]]
    fields: frozenset[str]
    conjuncts: tuple[str, ...]
    loose: bool

    def to_json(self) -> list[object]:
        return [sorted(list(c) for c in self.chains), sorted(self.fields), list(self.conjuncts), self.loose]

    @classmethod
    def from_json(cls, data: list[object]) -> "Analysis":
        chains, fields, conjuncts, loose = data  # type: ignore[misc]
        return cls(frozenset(tuple(c) for c in chains), frozenset(fields), tuple(conjuncts), bool(loose))  # type: ignore[arg-type]


def analyse(expression: str) -> Analysis:
    """The expression's parse tree, read: ValueError where it does not parse."""
    root = _CelParser(expression).parse()
    return Analysis(
        chains=frozenset(_chains(root, frozenset())),
        fields=frozenset(_fields(root)),
        conjuncts=_conjuncts(expression, root),
        loose=isinstance(root, Call) and root.function in ("_||_", "_?_:_"),
    )


class Analyses:
    """The analyses of one rule set's expressions by text, each parsed once as the set is
    built. `known` (text -> `Analysis.to_json()`): those computed ahead of time, as the
    compiled rules hold them (engine/compiled_rules.py: parsing every expression again costs
    more than loading the rules); the texts are the rules' own, so each is what `analyse`
    computes (tests/test_cel_tree.py)."""

    __slots__ = ("_by_text", "_known")

    def __init__(self, known: "dict[str, list[object]] | None" = None):
        self._by_text: dict[str, Analysis] = {}
        self._known = known or {}

    def get(self, expression: str) -> Analysis:
        found = self._by_text.get(expression)
        if found is None:
            data = self._known.get(expression)
            try:
                found = Analysis.from_json(data) if data is not None else None
            except (TypeError, ValueError):  # (a damaged table: parsed instead)
                found = None
            found = self._by_text[expression] = found or analyse(expression)
        return found


def reads(analysis: Analysis, variables: frozenset[str] | tuple[str, ...]) -> set[tuple[str, ...]]:
    """The paths of `variables` that the analysed expression reads (`Analysis.chains`)."""
    return {c for c in analysis.chains if c[0] in variables}
