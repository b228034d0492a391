"""The output formats of `check --format`, by name, in one table (`FORMATS`): each format's
renderer, failure renderer, deployment renderer, file extension, document syntax and description.
The command line (choices, help, the failure document of a command line argparse refuses),
report/outputs.py, report/deployment.py, output_stream.py, the docs (docs/ci.md's table,
written by `make generate`) and the tests read it; a new format is one module, one entry here
and its snapshots.

Renderers are named "module:function" and imported when their format is used, so the check
process imports only the renderer it prints with. Their signatures:
- `render(report, rules=(), *, fleet=False, color=False) -> str`: the report's document;
- `failure(code, input_error=None, internal_error=None) -> str`: the same format's document of a
  check that could not run (exit 2/3); None: stderr says it, standard output stays empty;
- `deployment(fmt, deployment, checked, rules, *, color=False) -> str`: the reports of a
  deployment file with several sglang commands, each under its place.

`syntax` says what the document is, for what every format of that syntax shares: "json"
(written by json.dumps, which escapes every control character; a non-UTF-8 stdout gets `\\uXXXX`
escapes), "xml" (control characters escaped, XML character references on a non-UTF-8 stdout),
"lines" (one line per finding) and "text" (for people, with the text output's own colours); the
input's control characters are escaped in every syntax but JSON (report/escape.py).
"""

from __future__ import annotations

from importlib import import_module

from inkling_compat.sglang.plain_dataclass import dataclass, replace

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

_SECTIONS = "inkling_compat.report.deployment:sections"


@dataclass(frozen=True)
class Format:  # (a plain record: a NamedTuple class costs about 1 ms at every start)
    """`description`: what it is, for --help and docs/ci.md (a phrase); `extension`: of a file
    holding it (`--output report.<extension>`); `syntax`: json | xml | lines | text (see the module
    doc); `render`, `failure` (None: nothing on standard output at exit 2/3) and `deployment`:
    "module:function"; `reader`: who reads it (for docs/ci.md)."""

    name: str
    description: str
    extension: str
    syntax: str
    render: str
    failure: str | None
    deployment: str = _SECTIONS
    reader: str = ""

    replace = replace  # (fmt.replace(**changes), as dataclasses.replace(fmt, **changes))

    def renderer(self) -> Callable[..., str]:
        return _resolve(self.render)

    def failure_renderer(self) -> Callable[..., str] | None:
        return _resolve(self.failure) if self.failure else None

    def deployment_renderer(self) -> Callable[..., str]:
        return _resolve(self.deployment)


FORMATS: tuple[Format, ...] = (
    Format("text", "the report for people (the default)", "txt", "text", "inkling_compat.report.text:render", None, reader="a terminal, a CI log"),
    Format("json", "the report as one JSON document", "json", "json", "inkling_compat.report.json_report:render_json", "inkling_compat.report.json_report:json_failure", "inkling_compat.report.deployment:json_document", reader="scripts (`jq`)"),
    Format("sarif", "SARIF 2.1.0", "sarif", "json", "inkling_compat.report.sarif:render_sarif", "inkling_compat.report.sarif:sarif_failure", "inkling_compat.report.deployment:sarif_runs", reader="GitHub code scanning, SARIF viewers"),
    Format("junit", "JUnit XML, one test case per rule and input", "xml", "xml", "inkling_compat.report.junit:render_junit", "inkling_compat.report.junit:junit_failure", "inkling_compat.report.deployment:junit_suites", reader="GitLab (`artifacts:reports:junit`), Jenkins, Azure Pipelines"),
    Format("github", "GitHub Actions workflow annotations", "txt", "lines", "inkling_compat.report.github:render_github", "inkling_compat.report.github:github_failure", reader="the GitHub Actions runner"),
    Format("concise", "`path:line:col: rule-id message`, one line per problem", "txt", "lines", "inkling_compat.report.concise:render_concise", None, reader="editors (problem matchers), `grep`"),
    Format("gitlab", "GitLab Code Quality JSON", "json", "json", "inkling_compat.report.gitlab:render_gitlab", "inkling_compat.report.gitlab:gitlab_failure", "inkling_compat.report.gitlab:gitlab_deployment", reader="GitLab merge requests (`artifacts:reports:codequality`)"),
    Format("checkstyle", "Checkstyle XML, an error per problem under its file", "xml", "xml", "inkling_compat.report.checkstyle:render_checkstyle", "inkling_compat.report.checkstyle:checkstyle_failure", "inkling_compat.report.checkstyle:checkstyle_deployment", reader="Jenkins (Warnings Next Generation), reviewdog, editors"),
)
BY_NAME: dict[str, Format] = {f.name: f for f in FORMATS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DEFAULT = "text"


def get(name: str) -> Format:
    """The format named `name` (KeyError for another name: argparse's choices come from NAMES)."""
    return BY_NAME[name]


def with_failure_document() -> tuple[str, ...]:
    """The formats whose exit 2/3 is a document on standard output (the rest: stderr only)."""
    return tuple(f.name for f in FORMATS if f.failure)


def help_text() -> str:
    """`--format`'s help: every format with its description."""
    return ", ".join(f"{f.name} ({f.description})" for f in FORMATS)


def _resolve(path: str) -> Callable[..., Any]:
    module, _, function = path.partition(":")
    return getattr(import_module(module), function)  # type: ignore[no-any-return]
