"""The sglang commands a shell script runs, with each command's words as bash passes them.

The script is parsed by tree-sitter-bash (a maintained grammar of bash; imported only when a
script is read) and walked in the order bash runs it: comments, quotes (also across lines),
`\\`-newline continuations, heredocs (data, never commands), functions (a body counts where the
function is called, with its arguments as `$1`...), `&&`/`||`/`;`/`|` chains, subshells, `if`,
`case` and loop bodies. Words are expanded as bash expands them: variables assigned or exported
earlier in the same file (`${V:-x}`, `${V:=x}`, `${V-x}`, `${V:+x}`, arrays and `"${A[@]}"`),
field splitting of unquoted expansions. A value the file does not define (`$1`, the
environment, `$(cmd)`, a variable set in a branch, one a sourced file may set, a file-name
pattern bash would glob) is *unknown*: its word is kept with the reason, never guessed.

Wrappers are unwrapped to the program they run: `env`, `nohup`, `exec`, `timeout`, `numactl`,
`taskset`, `srun`, `sudo`, `nice`, `stdbuf`, `uv run`, `conda run`, `bash -c`/`sh -c` (the
string read as a script, recursively) and `docker run`/`podman run IMAGE CMD...` (docker's own
options skipped, `-e NAME=VALUE` added to the command's environment, `--entrypoint` honoured).
What is found is an sglang entry point: `python[3] [-u -X opt ...] -m sglang.launch_server`,
`python -m sglang.cli.main serve`, `sglang serve`.

Bounded whatever the script: at most 1 MiB of shell is parsed per file, 100,000 words per
command and elements per array, 16 Mi characters per word, 64 levels of calls and `bash -c`,
1,000,000 statements walked; past one, an InputError naming the file. The grammar is held to
real bash by tests/test_shell_bash.py.
"""

from __future__ import annotations

import functools
import re
from collections import ChainMap
from types import MappingProxyType

from inkling_compat.errors import InputError
from inkling_compat.sglang.plain_dataclass import dataclass, field

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

MAX_WORDS = 100_000  # words of one command, and elements of one array
MAX_VALUE = 16 * 1024 * 1024  # characters of one expanded word (the file cap)
MAX_DEPTH = 64  # functions calling functions, `bash -c` inside `bash -c`
MAX_STEPS = 1_000_000  # statements walked (functions called many times)
# Bytes of shell parsed for one file: a 1 MiB script takes ~0.8 s of CPU and ~130 MB to read;
# the 16 MiB file cap would be ~15 s and a gigabyte in the grammar's tree.
MAX_SCRIPT = 1024 * 1024


def is_name(text: str) -> bool:
    """A shell variable name, `^[A-Za-z_][A-Za-z0-9_]*$` (string tests: no pattern compiled at import)."""
    text = text[:-1] if text.endswith("\n") else text  # (`$` also matches before a last newline)
    return text.isascii() and text.isidentifier()


def _assignment(word: str) -> tuple[str, str] | None:
    """(name, value) of a `NAME=value` word, as `^([A-Za-z_][A-Za-z0-9_]*)=(.*)$` (re.S) reads it."""
    name, equals, value = word.partition("=")
    return (name, value) if equals and name.isascii() and name.isidentifier() else None


def _is_python(name: str) -> bool:
    r"""`python`, `python3`, `python3.11`: `^python(\d+(\.\d+)?)?$`, `\d` any decimal digit."""
    name = name[:-1] if name.endswith("\n") else name
    if not name.startswith("python"):
        return False
    major, dot, minor = name[6:].partition(".")
    return (not major and not dot) or (major.isdecimal() and (not dot or minor.isdecimal()))


def _has_glob(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


@functools.cache
def _pattern(source: str | bytes) -> re.Pattern:  # type: ignore[type-arg]
    """A pattern compiled on first use (most scripts need few of them)."""
    return re.compile(source)


_IFS = r"[ \t\n]+"
_GLOB_SOURCE = r"(?<!\\)[*?\[]"  # unescaped, in an unquoted word's source


def _tail_end(source: bytes, start: int) -> int:
    """Where the blanks and escapes after a command's last word end: what
    `re.match(rb"(?:[ \t]|\\[^\n]|\\\n)*", source[start:])` matches (a blank, or a `\\` and the
    byte after it), without compiling it."""
    end, size = start, len(source)
    while end < size:
        byte = source[end]
        if byte == 32 or byte == 9:
            end += 1
        elif byte == 92 and end + 1 < size:
            end += 2
        else:
            break
    return end


def _joined(text: str) -> str:
    """`re.sub(r"\\\r?\n", "", text)`: `\\`-newline continuations removed (in a text without
    `\r`, as a launch file's text always is once read, the one literal: no pattern compiled)."""
    if "\r" in text:
        return re.sub(r"\\\r?\n", "", text)
    return text.replace("\\\n", "")


@dataclass(frozen=True)
class FoundCommand:
    """One sglang command found in a script or an exec-form argv."""

    # argv from the sglang entry on (`python3 -m sglang.launch_server ...`, `sglang serve ...`),
    # as bash passes it (wrappers removed).
    words: tuple[str, ...]
    # 1-based line of the command in the text given (1 for an argv).
    line: int
    # The command's literal environment: the given env, variables exported before it, its own
    # `NAME=value` prefix and `env`/`docker run -e` assignments (values not known are left out).
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # index into words -> where its value comes from ("$PORT, not set in start.sh").
    unknown: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))


def find_commands(script: str, *, origin: str, env: Mapping[str, str] | None = None) -> list[FoundCommand]:
    """Every sglang command a shell script runs, in the order bash reaches them."""
    walker = _Walker(origin)
    scope = _Scope.top(env or {}, origin)
    walker.script(script, scope, line=None)
    if not walker.found and walker.syntax_error is not None:
        raise InputError(origin, f"line {walker.syntax_error}", "no sglang command found, and the shell grammar (tree-sitter-bash) does not read the script from here")
    return walker.found


def find_in_argv(argv: Sequence[str], *, origin: str, env: Mapping[str, str] | None = None) -> list[FoundCommand]:
    """The sglang command an exec-form argv (a container's command + args) runs: wrappers and
    `sh -c` unwrapped."""
    walker = _Walker(origin)
    scope = _Scope.top(env or {}, origin)
    if len(argv) > MAX_WORDS:
        raise InputError(origin, "(command)", f"more than {MAX_WORDS:,} words")
    try:
        walker.run([_Word(str(w)) for w in argv], _Env(scope.environment), scope, 1, 0)
    except _Refused as exc:
        raise InputError(origin, "(command)", str(exc)) from None
    return walker.found


# --- values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Word:
    """One word after expansion; `unknown` says where a value not known comes from."""

    text: str
    unknown: str | None = None


@dataclass(frozen=True)
class _Unknown:
    reason: str


_UNSET = None  # a variable unset in the file: it expands to nothing (known)


class _Scope:
    """Variables (str, list for an array, _Unknown, or _UNSET), whether each is exported, the
    positional parameters (None: the script's own arguments, not known) and the functions.
    A copy (a subshell, a branch) is a layer over its parent: copying and seeing what a
    branch changed cost what the branch assigned, not every variable of the script."""

    def __init__(self, variables: Any, exported: Any, positional: list[_Word] | None, functions: dict[str, Any], origin: str):
        self.variables, self.exported, self.positional, self.functions, self.origin = variables, exported, positional, functions, origin
        self.sourced: str | None = None  # a file the script sources (`. FILE`): what it sets is not known

    @classmethod
    def top(cls, env: Mapping[str, str], origin: str) -> "_Scope":
        return cls(ChainMap({str(k): str(v) for k, v in env.items()}), ChainMap({str(k): True for k in env}), None, {}, origin)

    def _with(self, positional: list[_Word] | None) -> "_Scope":
        self.positional = positional
        return self

    def copy(self) -> "_Scope":
        inner = _Scope(self.variables.new_child(), self.exported.new_child(), self.positional, self.functions, self.origin)
        inner.sourced = self.sourced
        return inner

    def export(self, name: str, on: bool = True) -> None:
        self.exported[name] = on

    def environment(self) -> dict[str, str]:
        """The exported variables whose values are known."""
        return {k: v for k, v in self.variables.items() if self.exported.get(k, False) and isinstance(v, str)}

    def get(self, name: str) -> Any:
        """A variable's value, _Unknown where the file does not say."""
        if name.isdigit():
            if name == "0":
                return self.origin
            if self.positional is None:
                return _Unknown(f"${name}, an argument of {self.origin}")
            i = int(name)
            return self.positional[i - 1].text if i <= len(self.positional) and self.positional[i - 1].unknown is None else (
                _Unknown(self.positional[i - 1].unknown or "") if i <= len(self.positional) else _UNSET
            )
        if name in ("@", "*", "#"):
            if self.positional is None:
                return _Unknown(f"${name}, the arguments of {self.origin}")
            if name == "#":
                return str(len(self.positional))
            unknown = next((w.unknown for w in self.positional if w.unknown), None)
            return _Unknown(unknown) if unknown else [w.text for w in self.positional]
        if name in self.variables:
            return self.variables[name]
        if not is_name(name):
            return _Unknown(f"${name}, set when {self.origin} runs")
        if self.sourced:
            return _Unknown(f"${name}, not set in {self.origin} (it sources {self.sourced}, not read)")
        return _Unknown(f"${name}, not set in {self.origin}")


class _Env:
    """A command's environment as wrappers change it (`env -i`, `env A=1`, `docker run -e`),
    read from the scope's exported variables only when a command is found."""

    def __init__(self, base: Any):
        self.base, self.set, self.removed, self.cleared = base, {}, set(), False  # type: ignore[var-annotated]

    def __setitem__(self, key: str, value: str) -> None:
        self.set[key] = value
        self.removed.discard(key)

    def pop(self, key: str, default: Any = None) -> None:
        self.set.pop(key, None)
        self.removed.add(key)

    def clear(self) -> None:
        self.set, self.removed, self.cleared = {}, set(), True

    def update(self, values: Mapping[str, str]) -> None:
        for key, value in values.items():
            self[key] = value

    def get(self, key: str) -> str | None:
        if key in self.set:
            return self.set[key]  # type: ignore[no-any-return]
        if self.cleared or key in self.removed:
            return None
        return self.base().get(key)  # type: ignore[no-any-return]

    def materialize(self) -> dict[str, str]:
        out = {} if self.cleared else {k: v for k, v in self.base().items() if k not in self.removed}
        out.update(self.set)
        return out


class _Pieces:
    """The fields one word expands to: literal and quoted text joins the current field; an
    unquoted expansion's value is split at blanks, as bash's field splitting does."""

    def __init__(self, split: bool = True) -> None:
        self.split = split  # False: an assignment's value (no field splitting)
        self.fields: list[_Word] = []
        self.text: list[str] = []
        self.size = 0
        self.present = False  # a quoted "" makes a field of its own
        self.unknown: str | None = None
        self.vanished = False  # the last expansion was "${A[@]}" of no elements
        self.pattern = False  # the field holds an unquoted `*`, `?` or `[`: bash globs it

    def add(self, text: str, quoted: bool = True) -> None:
        self.size += len(text)
        if self.size > MAX_VALUE:
            raise _Refused(f"a word longer than {MAX_VALUE} characters")
        if quoted or not self.split:
            self.text.append(text)
            self.present = True
            return
        parts = _pattern(_IFS).split(text)
        for i, part in enumerate(parts):
            if i:
                self.end()
            if part:
                self.text.append(part)
                self.present = True
                self.pattern = self.pattern or _has_glob(part)

    def mark(self, reason: str, source: str) -> None:
        """A value not known: the word keeps its source text and the reason."""
        self.unknown = self.unknown or reason
        self.text.append(source)
        self.present = True

    def end(self) -> None:
        if self.present:
            text = "".join(self.text)
            if self.pattern and self.unknown is None:
                self.unknown = f"{_short(text)}, a file-name pattern bash expands where the script runs"
            self.fields.append(_Word(text, self.unknown))
            if len(self.fields) > MAX_WORDS:
                raise _Refused(f"more than {MAX_WORDS:,} words in one command")
        self.text, self.present, self.unknown, self.pattern = [], False, None, False

    def done(self) -> list[_Word]:
        self.end()
        return self.fields


class _Refused(Exception):
    """A script the checker will not expand (a limit), raised as the file's InputError."""


# --- the walk -------------------------------------------------------------------------------

_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        binding = _binding("tree_sitter")
        _PARSER = binding.Parser(binding.Language(_binding("tree_sitter_bash").language()))
    return _PARSER


def _binding(package: str) -> Any:
    """A package's compiled `_binding` module (tree-sitter's parser, tree-sitter-bash's grammar),
    loaded without running the package's `__init__`: tree_sitter's imports `typing` for a
    Protocol of its query API, tree_sitter_bash's `importlib.resources` for its highlight
    queries, neither used here (docs/performance.md). The module is registered under its
    name, so a later `import tree_sitter` takes it as its binding; where it is not found so,
    the package is imported."""
    import sys

    name = f"{package}._binding"
    found = sys.modules.get(name)
    if found is not None:
        return found
    from importlib.machinery import ExtensionFileLoader, PathFinder  # (not importlib.util: 0.6 ms of a check)

    spec = PathFinder.find_spec(package)  # (the package on sys.path; its __init__ is not run)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        located = PathFinder.find_spec(name, [folder])
        if located is None or not isinstance(located.loader, ExtensionFileLoader):
            continue
        try:  # the loader's two steps, the module given what module_from_spec gives an extension's
            module = located.loader.create_module(located)
            module.__spec__, module.__loader__, module.__package__, module.__file__ = located, located.loader, located.parent, located.origin
            located.loader.exec_module(module)
        except (ImportError, OSError):
            continue
        sys.modules[name] = module
        return module
    import importlib

    return importlib.import_module(name)


class _Walker:
    def __init__(self, origin: str):
        self.origin = origin
        self.found: list[FoundCommand] = []
        self.steps = 0
        self.read = 0  # bytes of script parsed (`bash -c` strings and `eval` too)
        self.syntax_error: int | None = None

    # scripts

    def script(self, text: str, scope: _Scope, line: int | None, depth: int = 0) -> None:
        """Walk a script (`line`: the line of the `bash -c` command it came from, else None)."""
        if depth > MAX_DEPTH:
            raise InputError(self.origin, "(file)", f"`bash -c` nested more than {MAX_DEPTH} deep")
        source = text.encode("utf-8", "surrogatepass")
        self.read += len(source)
        if self.read > MAX_SCRIPT:
            raise InputError(self.origin, "(file)", f"a shell script of more than {MAX_SCRIPT:,} bytes is not read (a launch script is far smaller; its grammar's tree would take seconds and gigabytes)")
        tree = _parser().parse(source)
        run = _Run(self, source, line, depth)
        try:
            run.block(tree.root_node, scope)
        except _Refused as exc:
            raise InputError(self.origin, "(file)", str(exc)) from None
        except RecursionError:
            raise InputError(self.origin, "(file)", "nested too deeply to read") from None

    # commands

    def run(self, words: list[_Word], env: _Env, scope: _Scope, line: int, depth: int) -> None:
        """A simple command bash runs: an sglang entry point, or a wrapper around one."""
        while words:
            head = words[0]
            if head.unknown is not None:
                # `$PYTHON -m sglang.launch_server ...`: the interpreter is not known, the module is.
                if len(words) > 2 and words[1].text == "-m" and words[2].text.startswith("sglang"):
                    words = [_Word("python3"), *words[1:]]
                    continue
                return
            name = head.text.rsplit("/", 1)[-1]
            if _is_python(name) or name == "sglang":
                if _entry_at([w.text for w in words]) is not None:
                    self._found(words, env, line)
                return
            unwrap = _WRAPPERS.get(name)
            if unwrap is None:
                return
            step = unwrap(words, env)
            if step is None:
                return
            if isinstance(step, _Script):  # `bash -c STRING`: a script of its own, with the environment only
                self.script(step.text, _Scope.top(step.env, self.origin)._with(step.positional), line, depth + 1)
                return
            words = step

    def _found(self, words: list[_Word], env: _Env, line: int) -> None:
        if len(words) > MAX_WORDS:
            raise _Refused(f"more than {MAX_WORDS:,} words in one command")
        self.found.append(
            FoundCommand(
                tuple(w.text for w in words),
                line,
                MappingProxyType(env.materialize()),
                MappingProxyType({i: w.unknown for i, w in enumerate(words) if w.unknown is not None}),
            )
        )


@dataclass(frozen=True)
class _Script:
    """`bash -c STRING ARGS...`: STRING is read as a script with this environment."""

    text: str
    env: dict[str, str]
    positional: list[_Word] | None


class _Run:
    """One script's tree walked in bash's order."""

    _SKIP = frozenset({"comment", "heredoc_body", "heredoc_start", "heredoc_end", "test_command", "function_definition"})

    def __init__(self, walker: _Walker, source: bytes, line: int | None, depth: int):
        self.walker, self.source, self.line, self.depth = walker, source, line, depth

    def text(self, start: int, end: int) -> str:
        return self.source[start:end].decode("utf-8", "surrogatepass")

    def at(self, node: Any) -> int:
        return self.line if self.line is not None else node.start_point[0] + 1

    def step(self) -> None:
        self.walker.steps += 1
        if self.walker.steps > MAX_STEPS:
            raise _Refused(f"more than {MAX_STEPS:,} statements to walk (functions called too often)")

    # statements

    def block(self, node: Any, scope: _Scope) -> None:
        for child in node.named_children:
            self.statement(child, scope)

    def statement(self, node: Any, scope: _Scope) -> None:
        self.step()
        kind = node.type
        if kind in self._SKIP:
            if kind == "function_definition":
                name = node.child_by_field_name("name")
                body = node.child_by_field_name("body")
                if name is not None and body is not None:
                    scope.functions[self.text(name.start_byte, name.end_byte)] = (self, body)
            return
        if kind == "ERROR":
            if self.walker.syntax_error is None:
                self.walker.syntax_error = node.start_point[0] + 1
            self.block(node, scope)
            return
        if kind == "command":
            self.command(node, scope)
        elif kind == "variable_assignment":
            self.assign(node, scope, export=False)
        elif kind == "variable_assignments":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assign(child, scope, export=False)
        elif kind == "declaration_command":
            self.declare(node, scope)
        elif kind == "unset_command":
            for child in node.named_children:
                for w in self.words(child, scope):
                    scope.variables[w.text] = _UNSET
                    scope.export(w.text, False)
        elif kind in ("subshell", "pipeline"):
            inner = scope.copy()
            self.block(node, inner)
        elif kind in ("list", "redirected_statement", "negated_command", "compound_statement", "program", "do_group"):
            for child in node.named_children:
                if kind == "redirected_statement" and child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    continue
                self.statement(child, scope)
        elif kind in ("if_statement", "case_statement", "while_statement", "for_statement", "c_style_for_statement"):
            self.branches(node, scope)
        elif kind in ("elif_clause", "else_clause", "case_item"):
            self.block(node, scope)

    def branches(self, node: Any, scope: _Scope) -> None:
        """A compound command whose bodies may or may not run: each body is walked (its
        commands are found), and a variable it assigns is not known after it."""
        inner = scope.copy()
        line = node.start_point[0] + 1
        if node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None:
                inner.variables[self.text(variable.start_byte, variable.end_byte)] = _Unknown(f"a loop variable (line {line} of {self.walker.origin})")
        for child in node.named_children:
            if child.type in ("variable_name", "word", "string", "raw_string", "number", "concatenation", "simple_expansion", "expansion"):
                continue  # a for loop's values, a case's subject
            self.statement(child, inner)
        for name, value in inner.variables.maps[0].items():  # (what the bodies assigned)
            if name in scope.variables and scope.variables[name] == value:
                continue
            before = scope.variables.get(name)
            if isinstance(before, list) and isinstance(value, list) and len(value) > len(before) and value[: len(before)] == before:
                # `A+=(...)` in a branch: the elements before stay known, the ones it may add are one unknown word
                added = " ".join(e.text if isinstance(e, _Word) else e for e in value[len(before) :])
                scope.variables[name] = [*before, _Word(added, f"${{{name}[@]}}: elements appended in a branch or loop at line {line} of {self.walker.origin}")]
                continue
            scope.variables[name] = _Unknown(f"${name}, set in a branch or loop at line {line} of {self.walker.origin}")
        for name, on in inner.exported.maps[0].items():
            scope.export(name, on)

    def assign(self, node: Any, scope: _Scope, export: bool) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        name = self.text(name_node.start_byte, name_node.end_byte)
        if name_node.type == "subscript":  # A[i]=x: one element of an array
            base = name_node.child_by_field_name("name")
            if base is not None:
                array = self.text(base.start_byte, base.end_byte)
                scope.variables[array] = _Unknown(f"${{{array}[@]}}, an element set at line {self.at(node)} of {self.walker.origin}")
            return
        value_node = node.child_by_field_name("value")
        append = any(c.type == "+=" for c in node.children)
        value: Any
        if value_node is None:
            value = ""
        elif value_node.type == "array":
            elements: list[_Word] = []
            for child in value_node.named_children:
                elements += self.words(child, scope)
                if len(elements) > MAX_WORDS:
                    raise _Refused(f"an array of more than {MAX_WORDS:,} elements")
            # an element not known stays that element (its word), the others known
            value = [w if w.unknown else w.text for w in elements]
        else:
            value = self.single(value_node, scope)
        if append:
            old = scope.get(name)
            if isinstance(old, _Unknown) or isinstance(value, _Unknown):
                value = old if isinstance(old, _Unknown) else value
            elif isinstance(old, list) or isinstance(value, list):
                value = (old if isinstance(old, list) else ([] if old is _UNSET else [old])) + (value if isinstance(value, list) else [value])
            else:
                value = (old or "") + value
        scope.variables[name] = value
        if export:
            scope.export(name)

    def declare(self, node: Any, scope: _Scope) -> None:
        keyword = node.children[0].type if node.children else ""
        export = keyword == "export"
        for child in node.named_children:
            if child.type == "word":
                flags = self.text(child.start_byte, child.end_byte)
                if flags.startswith("-") and "x" in flags:
                    export = True
                continue
            if child.type == "variable_assignment":
                self.assign(child, scope, export)
            elif child.type == "variable_name" and export:
                scope.export(self.text(child.start_byte, child.end_byte))

    def command(self, node: Any, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        prefix = [c for c in node.named_children if c.type == "variable_assignment"]
        if name_node is None:  # assignments alone
            for child in prefix:
                self.assign(child, scope, export=False)
            return
        if prefix and "\n" in self._gap(prefix[-1].end_byte, name_node.start_byte):
            for child in prefix:  # assignments on a line of their own (a grammar quirk)
                self.assign(child, scope, export=False)
            prefix = []
        # bash expands the words first, then the `NAME=value` prefix (the command's own).
        words = self.word_list(self._arguments(node, name_node), scope)
        if not words:
            return
        head = words[0]
        name = head.text.rsplit("/", 1)[-1]
        if head.unknown is None and not (name in _WRAPPERS or name == "sglang" or _is_python(name) or head.text in scope.functions or head.text in ("shift", "eval", "source", ".")):
            return  # (any other program: nothing to find in it)
        env = _Env(scope.environment)
        local = scope.copy()
        for child in prefix:  # `NAME=value cmd`: in the command's environment only
            self.assign(child, local, export=True)
            name = child.child_by_field_name("name")
            key = self.text(name.start_byte, name.end_byte)
            value = local.variables.get(key)
            if isinstance(value, str):
                env[key] = value
            else:
                env.pop(key, None)
        self.dispatch(words, env, scope, self.at(node), node)

    def _arguments(self, node: Any, name_node: Any) -> list[Any]:
        out = [name_node]
        for i, child in enumerate(node.children):
            if node.field_name_for_child(i) == "argument":
                out.append(child)
        return out

    def _gap(self, start: int, end: int) -> str:
        """The source between two nodes, `\\`-newline continuations removed."""
        raw = self.source[start:end]
        if b"\\" not in raw:  # (the common case: a blank)
            return raw.decode("utf-8", "surrogatepass")
        return _joined(raw.decode("utf-8", "surrogatepass"))

    def word_list(self, nodes: list[Any], scope: _Scope) -> list[_Word]:
        """The words of a command's name and arguments; nodes with nothing between them (or
        only a `\\`-newline) are one word, as bash reads them (the grammar may split them)."""
        groups: list[list[Any]] = []
        for node in nodes:
            gap = self._gap(groups[-1][-1].end_byte, node.start_byte) if groups else " "
            if gap == "":
                groups[-1].append(node)
            elif "\\" in gap and self._strays(gap, groups):  # escaped blanks (`\ `) the grammar leaves out
                groups[-1].append(node)
            else:
                groups.append([node])
        if groups:
            start = groups[-1][-1].end_byte
            tail = self.source[start : _tail_end(self.source, start)]
            if b"\\" in tail:
                self._strays(_joined(tail.decode("utf-8", "surrogatepass")), groups)
        words: list[_Word] = []
        for group in groups:
            node = group[0]
            if len(group) == 1 and not isinstance(node, _Stray) and node.type == "word" and not node.children:  # (the common case)
                text = self.text(node.start_byte, node.end_byte)
                if "\\" not in text and not text.startswith("~") and not _has_glob(text):
                    words.append(_Word(text))
                    continue
            pieces = _Pieces()
            for node in group:
                if isinstance(node, _Stray):
                    pieces.add(node.text, quoted=True)
                else:
                    self.expand(node, scope, pieces, quoted=False)
            words += pieces.done()
            if len(words) > MAX_WORDS:
                raise _Refused(f"more than {MAX_WORDS:,} words in one command")
        if len(words) > MAX_WORDS:
            raise _Refused(f"more than {MAX_WORDS:,} words in one command")
        return words

    @staticmethod
    def _strays(gap: str, groups: list[list[Any]]) -> bool:
        """Add the words of escaped characters in a gap to `groups` (the first joins the word
        before when nothing separates them); True when the last touches the next word."""
        if not gap:
            return False
        tokens = re.findall(r"(?:\\.|[^ \t\n\\])+|[ \t\n]+", gap, re.S)
        for k, token in enumerate(tokens):
            if token[0] in " \t\n":
                continue
            stray = _Stray(re.sub(r"\\(.)", r"\1", token, flags=re.S))
            if k == 0:
                groups[-1].append(stray)
            else:
                groups.append([stray])
        return tokens[-1][0] not in " \t\n"

    def dispatch(self, words: list[_Word], env: _Env, scope: _Scope, line: int, node: Any) -> None:
        head = words[0]
        if head.unknown is None and head.text in scope.functions:
            if self.depth >= MAX_DEPTH:
                raise _Refused(f"functions calling functions more than {MAX_DEPTH} deep")
            run, body = scope.functions[head.text]
            inner = _Scope(scope.variables, scope.exported, words[1:], scope.functions, scope.origin)
            inner.sourced = scope.sourced
            body_run = _Run(run.walker, run.source, run.line, self.depth + 1)
            body_run.statement(body, inner)
            return
        if head.unknown is None and head.text == "shift" and scope.positional is not None:
            count = int(words[1].text) if len(words) > 1 and words[1].text.isdigit() else 1
            scope.positional = scope.positional[count:]
            return
        if head.unknown is None and head.text in ("source", ".") and len(words) > 1:
            scope.sourced = scope.sourced or _short(words[1].text)
            return
        if head.unknown is None and head.text == "eval":
            unknown = next((w.unknown for w in words[1:] if w.unknown), None)
            if unknown is None:
                self.walker.script(" ".join(w.text for w in words[1:]), scope, line, self.depth + 1)
            return
        self.walker.run(words, env, scope, line, self.depth)

    # words

    def words(self, node: Any, scope: _Scope) -> list[_Word]:
        pieces = _Pieces()
        self.expand(node, scope, pieces, quoted=False)
        return pieces.done()

    def single(self, node: Any, scope: _Scope) -> Any:
        """An assignment's value: one string (no field splitting), or _Unknown."""
        pieces = _Pieces(split=False)
        self.expand(node, scope, pieces, quoted=False)
        if pieces.unknown:
            return _Unknown(pieces.unknown)
        return "".join(pieces.text)

    def expand(self, node: Any, scope: _Scope, pieces: _Pieces, quoted: bool) -> None:
        kind = node.type
        start = node.start_byte
        if kind in ("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"):
            # The grammar may take the blanks before a `$` inside double quotes into the node.
            lead = len(self.source[start : node.end_byte]) - len(self.source[start : node.end_byte].lstrip(b" \t\n"))
            if lead:
                pieces.add(self.text(start, start + lead), quoted)
                start += lead
        if kind in ("word", "number", "command_name", "variable_name", "special_variable_name"):
            if node.named_children and kind == "command_name":
                for child in node.named_children:
                    self.expand(child, scope, pieces, quoted)
                return
            text = self.text(node.start_byte, node.end_byte)
            if not quoted and text.startswith("~") and (len(text) == 1 or text[1] == "/"):
                home = scope.variables.get("HOME")
                if isinstance(home, str):
                    text = home + text[1:]
                else:
                    pieces.mark(f"~ (the home folder), not set in {self.walker.origin}", text)
                    return
            if not quoted and _has_glob(text) and _pattern(_GLOB_SOURCE).search(text):
                pieces.pattern = True
            pieces.add(_unescape(text) if not quoted else _joined(text), quoted=True)
        elif kind == "raw_string":
            pieces.add(self.text(node.start_byte + 1, node.end_byte - 1), quoted=True)
        elif kind == "ansi_c_string":
            pieces.add(_ansi_c(self.text(node.start_byte + 2, node.end_byte - 1)), quoted=True)
        elif kind == "string":
            # A "" is a word of its own; "${A[@]}" of an empty array (or "$@" of none) is none.
            solid = False
            position = node.start_byte + 1
            for child in node.named_children:
                if child.type == "string_content":
                    continue
                gap = _unescape_double(self.text(position, child.start_byte))
                if gap:
                    solid = True
                    pieces.add(gap, quoted=True)
                pieces.vanished = False
                self.expand(child, scope, pieces, quoted=True)
                solid = solid or not pieces.vanished
                position = child.end_byte
            gap = _unescape_double(self.text(position, node.end_byte - 1))
            if gap or solid or position == node.start_byte + 1:
                pieces.add(gap, quoted=True)
        elif kind == "translated_string":
            for child in node.named_children:
                self.expand(child, scope, pieces, quoted)
        elif kind == "concatenation":
            position = node.start_byte
            for child in node.children:
                gap = self.text(position, child.start_byte)
                if gap:
                    pieces.add(_unescape(gap), quoted=True)
                self.expand(child, scope, pieces, quoted)
                position = child.end_byte
        elif kind == "simple_expansion":
            name = self.text(start + 1, node.end_byte)
            self.value(name, scope.get(name), pieces, quoted, self.text(start, node.end_byte), all_elements=name in ("@", "*"), star=name == "*")
        elif kind == "expansion":
            self.parameter(node, start, scope, pieces, quoted)
        elif kind in ("command_substitution", "arithmetic_expansion", "process_substitution", "brace_expression"):
            what = {"command_substitution": "a command's output", "arithmetic_expansion": "arithmetic", "process_substitution": "a process", "brace_expression": "a brace expansion"}[kind]
            source = self.text(start, node.end_byte)
            pieces.mark(f"{_short(source)}, {what} at line {self.at(node)} of {self.walker.origin}", source)
        elif not node.children:  # a word the grammar names otherwise (`\\$` alone)
            pieces.add(_unescape(self.text(node.start_byte, node.end_byte)), quoted=True)
        else:
            source = self.text(node.start_byte, node.end_byte)
            pieces.mark(f"{_short(source)}, not read (line {self.at(node)} of {self.walker.origin})", source)

    def value(self, name: str, value: Any, pieces: _Pieces, quoted: bool, source: str, all_elements: bool = False, star: bool = False) -> None:
        if isinstance(value, _Unknown):
            pieces.mark(value.reason, source)
        elif value is _UNSET:
            pieces.vanished = all_elements and not star
            return
        elif isinstance(value, _Word):  # an array's element not known
            pieces.mark(value.unknown or "", value.text)
        elif isinstance(value, list):
            if not all_elements:
                if value:
                    self.value(name, value[0], pieces, quoted, source)
                return
            if quoted and star:
                unknown = next((e for e in value if isinstance(e, _Word)), None)
                if unknown is not None:
                    pieces.mark(unknown.unknown or "", source)
                else:
                    pieces.add(" ".join(value), quoted=True)
                return
            pieces.vanished = not value
            for i, element in enumerate(value):
                if i:
                    pieces.end() if quoted else pieces.add(" ", quoted=False)
                if isinstance(element, _Word):
                    pieces.mark(element.unknown or "", element.text)
                else:
                    pieces.add(element, quoted)
        else:
            pieces.add(str(value), quoted)

    def parameter(self, node: Any, begin: int, scope: _Scope, pieces: _Pieces, quoted: bool) -> None:
        """`${...}` (from byte `begin`): the forms a launch script uses; any other is not known."""
        source = self.text(begin, node.end_byte)
        inner = source[2:-1]
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#])(?:\[([@*]|[0-9]+)\])?(.*)$", inner, re.S)
        if m is None or inner.startswith(("#", "!")) and len(inner) > 1:
            pieces.mark(f"{_short(source)}, not read (line {self.at(node)} of {self.walker.origin})", source)
            return
        name, index, rest = m.group(1), m.group(2), m.group(3)
        value = scope.get(name)
        if index is not None and not isinstance(value, _Unknown):
            if index in ("@", "*"):
                value = value if isinstance(value, list) else ([] if value is _UNSET else [value])
            else:
                items = value if isinstance(value, list) else ([] if value is _UNSET else [value])
                value = items[int(index)] if int(index) < len(items) else _UNSET
        if not rest:
            self.value(name, value, pieces, quoted, source, all_elements=index in ("@", "*") or name in ("@", "*"), star=index == "*" or name == "*")
            return
        op = re.match(r"^(:?[-=+?])", rest)
        if op is None:
            pieces.mark(f"{_short(source)}, not read (line {self.at(node)} of {self.walker.origin})", source)
            return
        operator = op.group(1)
        word_nodes = [c for c in node.named_children if c.type not in ("variable_name", "special_variable_name", "subscript")]
        if isinstance(value, _Unknown):
            default = source[len(source) - 1 - len(rest) + len(operator) : -1]
            said = f" (default {_short(default)})" if operator.endswith(("-", "=")) and default else ""
            pieces.mark(value.reason + said, source)
            return
        empty = value is _UNSET or value == "" or value == []
        null = value is _UNSET if ":" not in operator else empty
        use_word = (operator.endswith(("-", "=")) and null) or (operator.endswith("+") and not null)
        if operator.endswith("?"):
            use_word = False
        if not use_word:
            if operator.endswith("+"):
                return
            self.value(name, value, pieces, quoted, source, all_elements=index in ("@", "*"), star=index == "*")
            return
        alternative = _Pieces()
        start = begin + 2 + len(name.encode()) + (len(index) + 2 if index is not None else 0) + len(operator)
        position = start
        for child in word_nodes:
            if child.start_byte < start:
                continue
            gap = self.text(position, child.start_byte)
            if gap:
                alternative.add(_unescape_double(gap) if quoted else _unescape(gap), quoted=True)
            self.expand(child, scope, alternative, quoted)
            position = child.end_byte
        gap = self.text(position, node.end_byte - 1)
        if gap:
            alternative.add(_unescape_double(gap) if quoted else _unescape(gap), quoted=True)
        if alternative.unknown:
            pieces.mark(alternative.unknown, source)
            return
        text = "".join(alternative.text)
        if operator.endswith("=") and index is None:
            scope.variables[name] = text
        pieces.add(text, quoted)


@dataclass(frozen=True)
class _Stray:
    """A word of escaped characters between the grammar's words (`\\ ` alone)."""

    text: str


def _short(source: str) -> str:
    return source if len(source) <= 40 else source[:37] + "..."


def _unescape(text: str) -> str:
    """An unquoted word's text: `\\`-newline removed, `\\x` is x."""
    if "\\" not in text:
        return text
    text = _joined(text)
    return re.sub(r"\\(.)", r"\1", text, flags=re.S)


def _unescape_double(text: str) -> str:
    """Inside double quotes only `\\$ \\` \\" \\\\` and `\\`-newline are escapes."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b", "E": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(text: str) -> str:
    """`$'...'`'s escapes."""

    def one(m: re.Match[str]) -> str:
        s = m.group(1)
        if s[0] in _ANSI:
            return _ANSI[s[0]]
        if s[0] in "xuU":
            return chr(int(s[1:], 16)) if len(s) > 1 else "\\" + s
        if s[0] in "01234567":
            return chr(int(s, 8) & 0xFF)
        return "\\" + s

    return re.sub(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", one, text, flags=re.S)


# --- entry points and wrappers --------------------------------------------------------------

# python's own options that take a value (the next word, unless attached).
_PYTHON_VALUE = frozenset({"-X", "-W", "--check-hash-based-pycs"})


def _entry_at(words: Sequence[str]) -> tuple[int, str] | None:
    """(index of the first server argument, the entry point) for words starting at the
    program, or None."""
    if not words:
        return None
    name = words[0].rsplit("/", 1)[-1]
    if _is_python(name):
        j = 1
        module = None
        while j < len(words):
            w = words[j]
            if w == "-m" and j + 1 < len(words):
                module, j = words[j + 1], j + 2
                break
            if w.startswith("-m") and len(w) > 2:
                module, j = w[2:], j + 1
                break
            if w in _PYTHON_VALUE:
                j += 2
                continue
            if w.startswith("-") and w != "-" and not w.startswith("-c"):
                j += 1
                continue
            return None
        if module == "sglang.launch_server":
            return j, "python -m sglang.launch_server"
        if module in ("sglang.cli.main", "sglang") and j < len(words) and words[j] == "serve":
            return j + 1, "sglang serve"
        return None
    if name == "sglang" and len(words) > 1 and words[1] == "serve":
        return 2, "sglang serve"
    return None


def _options(words: list[_Word], start: int, value_short: str, bool_long: frozenset[str] = frozenset(), value_long: frozenset[str] | None = None) -> int:
    """The index after a wrapper's own options (from `start`): short options that take a
    value are in `value_short`; a long option takes the next word unless it is in `bool_long`
    (or, when `value_long` is given, unless it is not in it) or holds `=`."""
    i = start
    while i < len(words):
        w = words[i].text
        if w == "--":
            return i + 1
        if not w.startswith("-") or w == "-":
            return i
        if w.startswith("--"):
            takes = "=" not in w and (w not in bool_long if value_long is None else w in value_long)
            i += 2 if takes else 1
            continue
        letters = w[1:]
        took = False
        for k, letter in enumerate(letters):
            if letter in value_short:
                took = k == len(letters) - 1  # the value is the next word, else attached
                break
        i += 2 if took else 1
    return i


def _env_wrapper(words: list[_Word], env: _Env) -> list[_Word] | None:
    i = 1
    while i < len(words):
        w = words[i].text
        if w in ("-i", "--ignore-environment"):
            env.clear()
        elif w in ("-u", "--unset") and i + 1 < len(words):
            env.pop(words[i + 1].text, None)
            i += 1
        elif w.startswith("--unset="):
            env.pop(w[8:], None)
        elif w in ("-C", "--chdir"):
            i += 1
        elif w == "--":
            i += 1
            break
        elif w.startswith("-") and w not in ("-S", "--split-string") and not w.startswith("--split-string="):
            pass
        elif w in ("-S", "--split-string") and i + 1 < len(words):
            split = [_Word(t, words[i + 1].unknown) for t in _pattern(_IFS).split(words[i + 1].text.strip())]
            return _assignments(split + words[i + 2 :], env)
        else:
            break
        i += 1
    return _assignments(words[i:], env)


def _assignments(words: list[_Word], env: _Env) -> list[_Word]:
    i = 0
    while i < len(words):
        assigned = _assignment(words[i].text)
        if assigned is None:
            break
        if words[i].unknown is None:
            env[assigned[0]] = assigned[1]
        else:
            env.pop(assigned[0], None)
        i += 1
    return words[i:]


def _skip(value_short: str = "", bool_long: frozenset[str] = frozenset(), positional: int = 0, value_long: frozenset[str] | None = None):  # type: ignore[no-untyped-def]
    def unwrap(words: list[_Word], env: _Env) -> list[_Word] | None:
        i = _options(words, 1, value_short, bool_long, value_long)
        i += positional
        return words[i:] if i < len(words) else None

    return unwrap


def _uv(words: list[_Word], env: _Env) -> list[_Word] | None:
    if len(words) < 2 or words[1].text != "run":
        return None
    value_long = frozenset({"--with", "--with-editable", "--with-requirements", "--python", "--project", "--directory", "--env-file", "--extra", "--group", "--only-group", "--no-group", "--index", "--default-index", "--index-url", "--extra-index-url", "--find-links", "--package", "--config-file", "--cache-dir", "--script", "--color", "--index-strategy", "--keyring-provider", "--resolution", "--prerelease", "--exclude-newer", "--link-mode", "--compile-bytecode", "--refresh-package", "--reinstall-package", "--upgrade-package", "--no-binary-package", "--no-build-package", "--config-setting", "--python-platform", "--allow-insecure-host"})
    i = 2
    while i < len(words):
        w = words[i].text
        if w == "--":
            i += 1
            break
        if w in ("-m", "--module"):
            return [_Word("python3"), _Word("-m"), *words[i + 1 :]]
        if not w.startswith("-"):
            break
        if w.startswith("--"):
            i += 2 if w in value_long else 1
        else:
            i += 2 if w[-1] in "pwC" and len(w) == 2 else 1
    return words[i:] if i < len(words) else None


def _conda(words: list[_Word], env: _Env) -> list[_Word] | None:
    if len(words) < 2 or words[1].text != "run":
        return None
    i = _options(words, 2, "np", frozenset({"--no-capture-output", "--live-stream", "-v", "--verbose", "--debug"}))
    return words[i:] if i < len(words) else None


_DOCKER_BOOL = frozenset(
    {"--rm", "--detach", "--interactive", "--tty", "--privileged", "--init", "--read-only", "--publish-all", "--no-healthcheck", "--oom-kill-disable", "--disable-content-trust", "--sig-proxy", "--quiet", "--help", "--use-api-socket", "--replace", "--rmi", "--env-host", "--http-proxy", "--read-only-tmpfs", "--tls-verify", "--no-hosts"}
)


def _docker(words: list[_Word], env: _Env) -> list[_Word] | None:
    """`docker run [OPTIONS] IMAGE [COMMAND] [ARG...]` (also podman, nvidia-docker)."""
    if len(words) < 2:
        return None
    i = 1
    if words[1].text == "container" and len(words) > 2:
        i = 2
    if words[i].text != "run":
        return None
    i += 1
    entrypoint: _Word | None = None
    inner: dict[str, str] = {}
    while i < len(words):
        w = words[i].text
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-":
            break
        name, eq, attached = w.partition("=")
        value: _Word | None = None
        if w.startswith("--"):
            if eq:
                value = _Word(attached, words[i].unknown)
                i += 1
            elif w in _DOCKER_BOOL:
                i += 1
            else:
                value = words[i + 1] if i + 1 < len(words) else None
                i += 2
        else:
            letters = w[1:]
            took = next((k for k, letter in enumerate(letters) if letter in "acehlmpuvw"), None)
            name = "-" + letters[took] if took is not None else w
            if took is None:
                i += 1
            elif took < len(letters) - 1:
                value = _Word(letters[took + 1 :], words[i].unknown)
                i += 1
            else:
                value = words[i + 1] if i + 1 < len(words) else None
                i += 2
        if name in ("-e", "--env") and value is not None and value.unknown is None:
            key, has, val = value.text.partition("=")
            if has:
                inner[key] = val
            elif env.get(key) is not None:
                inner[key] = env.get(key)  # type: ignore[assignment]
        elif name == "--entrypoint" and value is not None:
            entrypoint = value
    if i >= len(words):
        return None
    command = words[i + 1 :]
    if entrypoint is not None and entrypoint.text:
        command = [entrypoint, *command]
    env.clear()
    env.update(inner)
    return command or None


def _shell_c(words: list[_Word], env: _Env) -> _Script | None:
    """`bash [-opts] -c STRING [NAME [ARGS...]]`: the string and its positional parameters."""
    i = 1
    while i < len(words):
        w = words[i].text
        if w in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if w.startswith(("-", "+")) and w not in ("-", "--"):
            if "c" in w[1:] and not w.startswith("--"):
                if i + 1 < len(words) and words[i + 1].unknown is None:
                    return _Script(words[i + 1].text, env.materialize(), words[i + 3 :] if i + 2 < len(words) else [])
                return None
            i += 1
            continue
        return None
    return None


_WRAPPERS: dict[str, Any] = {
    "env": _env_wrapper,
    "exec": _skip("a"),
    "nohup": _skip(),
    "command": _skip(),
    "builtin": _skip(),
    "time": _skip("fo"),
    "nice": _skip("n", value_long=frozenset({"--adjustment"})),
    "ionice": _skip("cnpP", value_long=frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"})),
    "stdbuf": _skip("ioe", value_long=frozenset({"--input", "--output", "--error"})),
    "chrt": _skip("", positional=1),
    "timeout": _skip("sk", frozenset({"--foreground", "--preserve-status", "--verbose", "--help", "--version"}), positional=1),
    "numactl": _skip("imCNpPcbx", value_long=frozenset()),
    "taskset": _skip("", positional=1),
    "srun": _skip(
        "AbcDdeGiJLmNnopqrStTwWxM",
        frozenset({"--exclusive", "--overlap", "--pty", "--label", "--unbuffered", "--verbose", "--quiet", "--kill-on-bad-exit", "--no-kill", "--wait-all-nodes", "--disable-status", "--overcommit", "--oversubscribe", "--spread-job", "--test-only", "--whole", "--help", "--usage", "--version", "--hold", "--contiguous", "--multi-prog", "--no-allocate", "--preserve-env", "--mpi-bind", "--exact", "--immediate", "--join", "--nodefile", "--use-min-nodes", "--no-requeue", "--requeue", "--reboot", "--x11"}),
    ),
    "sudo": _skip("ugChpDRrTU", value_long=frozenset({"--user", "--group", "--close-from", "--host", "--prompt", "--chdir", "--role", "--type", "--other-user", "--chroot", "--command-timeout"})),
    "uv": _uv,
    "conda": _conda,
    "mamba": _conda,
    "micromamba": _conda,
    "docker": _docker,
    "podman": _docker,
    "nvidia-docker": _docker,
    "bash": _shell_c,
    "sh": _shell_c,
    "dash": _shell_c,
}

