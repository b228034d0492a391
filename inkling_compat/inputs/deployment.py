"""Deployment files read for the sglang commands they run: Kubernetes manifests, docker-compose
files, SkyPilot tasks, Dockerfiles, shell scripts and lists of words.

`read_deployment(path)` names what the file is and finds every sglang command in it, each with
its place (file:line and the container, service or instruction that runs it), the words the
process gets (from the sglang entry on), the command's literal environment, and the words whose
value comes from outside the file (unknown: never guessed). The shell grammar is
`inputs/shell.py`'s (`find_commands` for shell text, `find_in_argv` for a list of words, which
unwraps `bash -c`, `env`, `docker run` ...); this module names what the file is and reads a
script, and inputs/deployment_formats.py where each other format keeps the command (imported
only for such a file: a launch script's check reads none of them):

* Kubernetes (any document with a pod spec: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet,
  Job, CronJob, LeaderWorkerSet, or any custom resource holding `containers`; multi-document
  streams, `kind: List`): each container's `command` + `args`, `$(VAR)` references replaced as
  the kubelet does from the container's literal `env`; `valueFrom`/`envFrom` values are unknown.
* docker-compose (`services:`): `entrypoint` + `command`, each a string (split into words as
  compose splits it, no shell) or a list; `environment` as a list or a map; `${VAR}`
  interpolation comes from the host, so it is unknown.
* SkyPilot tasks (`run:` with `envs:`): the run script, with `envs` as its environment.
* Dockerfiles (the `dockerfile` package: Docker's own Go parser; at most 20,000 lines): the last stage's `ENTRYPOINT`
  and `CMD`, exec form (no shell) or shell form (`/bin/sh -c`), with its `ENV`.
* A Helm chart's values file or a template: named as needing `helm template` first.

A file with no sglang command is an InputError saying what was looked at (one line). The YAML
is read with the caps of every other input (inputs/loading.py, inputs/limits.py).
`foreign_kind(data)` names a deployment file's data given where a server config was expected.
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType

from inkling_compat.errors import InputError
from inkling_compat.inputs import path_text
from inkling_compat.inputs.deployment_kind import DOCKERFILE, SCRIPT, WORDS
from inkling_compat.sglang.plain_dataclass import dataclass, field

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

ENTRIES = "python -m sglang.launch_server ..., sglang serve ..."


@dataclass(frozen=True)
class DeploymentCommand:
    """One sglang command of a deployment file, where it is and what it runs with."""

    file: str
    line: int
    # The container, service or instruction that runs it ("Deployment web, container sglang").
    where: str
    words: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # index into words -> where its value comes from ("$(POD_INDEX), from valueFrom ...").
    unknown: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def place(self) -> str:
        """`deploy.yaml:31 (Deployment web, container sglang)`."""
        return f"{self.file}:{self.line}" + (f" ({self.where})" if self.where else "")

    def launch_words(self) -> list[str]:
        """The command as `inputs/launch.parse_launch` takes it: the environment's assignable
        names as leading `NAME=value` words, then the command's words."""
        from inkling_compat.inputs.shell import is_name

        return [f"{k}={v}" for k, v in self.env.items() if is_name(k)] + list(self.words)


@dataclass(frozen=True)
class Deployment:
    """A deployment file: what it is and every sglang command found in it."""

    file: str
    kind: str
    commands: tuple[DeploymentCommand, ...]

    @property
    def structured(self) -> bool:
        """A file of containers or services (each report is headed by its place), as opposed to
        a script or a list of words holding one command."""
        return self.kind not in (SCRIPT, WORDS) or len(self.commands) != 1


def read_deployment(path: str, *, env: Mapping[str, str] | None = None) -> Deployment:
    """The deployment file at `path` (`-`: standard input). InputError (exit 2) when it cannot
    be read or holds no sglang command."""
    text, name = _read_text(path)
    return parse_deployment(text, name, env=env)


def parse_deployment(text: str, name: str, *, env: Mapping[str, str] | None = None) -> Deployment:
    """`read_deployment` on text already read, named `name`."""
    extra = dict(env or {})
    if _is_dockerfile(text, name):
        from inkling_compat.inputs.deployment_formats import dockerfile_commands

        placed = dockerfile_commands(text, name, extra)
        return _found(name, DOCKERFILE, [from_found(f, name, *at) for f, *at in placed], "the last stage's ENTRYPOINT and CMD")
    if _is_helm_template(text):
        raise InputError(name, "(file)", "a Helm chart template: render it with `helm template` and give the output (a Kubernetes manifest stream) with --launch")
    if _may_be_yaml(text):
        from inkling_compat.inputs.loading import yaml_documents

        documents = yaml_documents(text, name)
        if documents is not None:
            from inkling_compat.inputs.deployment_formats import yaml_commands

            structured = yaml_commands(documents, name, extra)
            if structured is not None:
                kind, placed, looked = structured
                return _found(name, kind, [from_found(f, name, *at) for f, *at in placed], looked)
    from inkling_compat.inputs.shell import find_commands

    found = find_commands(text, origin=name, env=extra)
    return _found(name, SCRIPT, tuple(from_found(f, name, f.line, "") for f in found), "the script's commands")


def _found(name: str, kind: str, commands: Sequence[DeploymentCommand], looked: str) -> Deployment:
    if not commands:
        raise InputError(name, "(file)", f"no sglang launch command in this {kind.split(' ', 1)[1]} (looked in {looked} for {ENTRIES})")
    return Deployment(name, kind, tuple(commands))


def from_found(found: Any, file: str, line: int, where: str, unknown: Mapping[int, str] | None = None) -> DeploymentCommand:
    """The command inputs/shell.py found (`FoundCommand`), placed in the file (`line`, `where`:
    the container, service or instruction) with the unknown values the format adds."""
    merged = {**dict(found.unknown), **(unknown or {})}
    return DeploymentCommand(file, line, where, tuple(found.words), MappingProxyType(dict(found.env)), MappingProxyType(merged))


# ---------------------------------------------------------------------------- reading

def _read_text(path: str) -> tuple[str, str]:
    from inkling_compat.inputs import stdin
    from inkling_compat.inputs.loading import MAX_INPUT_BYTES, read_capped

    if stdin.is_stdin(path):
        raw, name = stdin.read_bytes(MAX_INPUT_BYTES), stdin.NAME
    else:
        # (a regular file under the cap: FIFOs, sockets and devices refused as for --config)
        raw, name = read_capped(path, "a launch file (a deployment file, a shell script or a list of words)"), str(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(name, "(file)", "not UTF-8 text") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n"), name


def _may_be_yaml(text: str) -> bool:
    """A YAML document or stream: a mapping key, a list item or a document marker opens it
    (a shell script's first command line is none of these)."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return bool(stripped.startswith(("---", "[", "{", "- ", "%YAML")) or ":" in stripped and re.match(r"^[\"']?[A-Za-z_][\w.-]*[\"']?\s*:(\s|$)", stripped))
    return False


def _is_helm_template(text: str) -> bool:
    return "{{" in text and bool(re.search(r"\{\{-?\s*(\.Values|\.Release|\.Chart|include |template |toYaml|if |range )", text))




def _is_dockerfile(text: str, name: str) -> bool:
    base = path_text.name(name).lower()
    if base == "dockerfile" or base.startswith("dockerfile.") or base.endswith(".dockerfile") or base == "containerfile":
        return True
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return stripped.startswith(("FROM", "ARG")) and re.match(r"^(FROM|ARG)\s+\S", stripped) is not None
    return False
