"""Where each structured deployment file keeps its sglang commands (inputs/deployment.py names the
file and reads a script): Kubernetes manifests and streams (each container's `command` + `args`,
`$(VAR)` as the kubelet expands it), docker-compose services (`entrypoint` + `command`, `${VAR}`
from the host unknown), SkyPilot tasks (the `run:` script with `envs:`), Dockerfiles (the last
stage's ENTRYPOINT and CMD, through the `dockerfile` package) and a YAML/JSON list of words;
Helm values and mappings of no known kind are refused. Imported only for such a file.
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from inkling_compat.errors import InputError
from inkling_compat.inputs.deployment_kind import COMPOSE, KUBERNETES, SKYPILOT, WORDS, foreign_kind, helm_values, kubernetes_object
from inkling_compat.inputs.shell import FoundCommand, find_commands, find_in_argv, is_name

if TYPE_CHECKING:
    # A command found and where: (the command, its line, the container, service or instruction
    # that runs it, the unknown values the format adds or None); inputs/deployment.py makes each
    # a DeploymentCommand (`from_found`).
    Placed = tuple[FoundCommand, int, str, dict[int, str] | None]

MAX_DOCKERFILE_LINES = 20_000
MAX_CONTAINERS = 1_000  # containers or services read in one file (each may hold a script to parse)


@functools.cache
def _k8s_var() -> re.Pattern[str]:
    return re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def yaml_commands(documents: list[tuple[Any, Any]], name: str, extra: dict[str, str]) -> tuple[str, list[Placed], str] | None:
    """(what the file is, its sglang commands, where they were looked for) of a YAML stream that
    is a list of words, a Kubernetes manifest, a compose file or a SkyPilot task; None for a
    stream that is none of these and holds no mapping (it is read as a script). Helm values and
    a mapping of no kind known are an InputError."""
    datas = [d for d, _ in documents]
    if datas and all(isinstance(d, list) for d in datas) and len(datas) == 1 and _is_words(datas[0]):
        return WORDS, _words(datas[0], name, extra), "the list of words"
    kind = _documents_kind(datas)
    if kind == KUBERNETES:
        return (KUBERNETES, *_kubernetes(documents, name, extra))
    if kind == COMPOSE:
        return (COMPOSE, *_compose(documents[0], name, extra))
    if kind == SKYPILOT:
        return SKYPILOT, _skypilot(documents[0], name, extra), "the run: script"
    if kind is not None:  # a Helm values file
        raise InputError(name, "(file)", f"{kind}: render the chart with `helm template` and give the output (a Kubernetes manifest stream) with --launch")
    if any(isinstance(d, dict) for d in datas):
        raise InputError(name, "(file)", "a YAML mapping that is no deployment file known (a Kubernetes manifest, a docker-compose file, a SkyPilot task): no sglang command found; a server config goes to --config")
    return None


def _is_words(data: list[Any]) -> bool:
    return bool(data) and all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in data)


def _node(root: Any, *path: Any) -> Any:
    """The YAML node at a path of keys and indices (None if it is not there)."""
    import yaml

    node = root
    for step in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
        else:
            return None
        if node is None:
            return None
    return node


def _line(root: Any, *path: Any) -> int:
    """The 1-based line of the node at `path`, or of its nearest parent that is there."""
    path_list = list(path)
    while True:
        node = _node(root, *path_list)
        if node is not None:
            return node.start_mark.line + 1
        if not path_list:
            return 1
        path_list.pop()


def _documents_kind(datas: list[Any]) -> str | None:
    kinds = {foreign_kind(d, helm=False) for d in datas if isinstance(d, dict)}
    if KUBERNETES in kinds or any(kubernetes_object(d) for d in datas):
        return KUBERNETES
    for kind in (COMPOSE, SKYPILOT):
        if kind in kinds and len(datas) == 1:
            return kind
    if len(datas) == 1 and isinstance(datas[0], dict) and helm_values(datas[0]):
        return "a Helm values file"
    return None


# ------------------------------------------------------------------------- Kubernetes

_POD_SPEC_PATHS: tuple[tuple[str, ...], ...] = (
    ("spec",),
    ("spec", "template", "spec"),
    ("spec", "jobTemplate", "spec", "template", "spec"),
    ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
    ("spec", "leaderWorkerTemplate", "workerTemplate", "spec"),
    ("template", "spec"),  # a PodTemplate
)


def _kubernetes(documents: list[tuple[Any, Any]], name: str, extra: dict[str, str]) -> tuple[list[Placed], str]:
    commands: list[Placed] = []
    containers = 0
    objects = 0
    for data, root in documents:
        items: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
        if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
            items = [(item, ("items", i)) for i, item in enumerate(data["items"])]
        for obj, prefix in items:
            if not kubernetes_object(obj):
                continue
            objects += 1
            label = f"{obj['kind']} {_name(obj)}".strip()
            for path, spec in _pod_specs(obj):
                role = _role(path)
                for group in ("initContainers", "containers", "mainContainer"):
                    for i, container in enumerate(spec.get(group) or []):
                        if not isinstance(container, dict):
                            continue
                        containers += 1
                        if containers > MAX_CONTAINERS:
                            raise InputError(name, "(file)", f"more than {MAX_CONTAINERS} containers: not read (split the stream)")
                        at = (*prefix, *path, group) + ((i,) if group != "mainContainer" else ())
                        where = f"{label}{role}, {'init container' if group == 'initContainers' else 'container'} {container.get('name', i)}"
                        commands += _container(container, root, at, name, where, extra)
    return commands, f"the command + args of {containers} container{'s' if containers != 1 else ''} in {objects} object{'s' if objects != 1 else ''}"


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def _role(path: tuple[Any, ...]) -> str:
    if "leaderTemplate" in path:
        return " (leader)"
    if "workerTemplate" in path:
        return " (workers)"
    return ""


def _pod_specs(obj: dict[str, Any]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path, pod spec) of an object: the known places first, else any mapping holding a list of
    `containers` (custom resources: Ray, KServe, Dynamo...)."""
    found = []
    for path in _POD_SPEC_PATHS:
        spec: Any = obj
        for key in path:
            spec = spec.get(key) if isinstance(spec, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
            found.append((path, spec))
    if found:
        return found
    stack: list[tuple[tuple[Any, ...], Any]] = [((), obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("containers"), list) and path:
                found.append((path, value))
                continue
            if isinstance(value.get("mainContainer"), dict):  # e.g. Dynamo's extraPodSpec
                found.append((path, {"mainContainer": [value["mainContainer"]]}))
                continue
            stack.extend(((*path, k), v) for k, v in reversed(list(value.items())) if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))) if isinstance(v, (dict, list)))
    return found


def _container(container: dict[str, Any], root: Any, at: tuple[Any, ...], name: str, where: str, extra: dict[str, str]) -> list[Placed]:
    env = dict(extra)
    outside: dict[str, str] = {}
    for item in container.get("env") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if "value" in item and "valueFrom" not in item:
            value = item.get("value")
            env[item["name"]] = "" if value is None else str(value)
        else:
            source = item.get("valueFrom")
            what = next(iter(source), "valueFrom") if isinstance(source, dict) and source else "valueFrom"
            outside[item["name"]] = f"{what} in {where}"
            env.pop(item["name"], None)
    command = container.get("command") if isinstance(container.get("command"), list) else None
    args = container.get("args") if isinstance(container.get("args"), list) else None
    if command is None and args is None:
        return []
    raw = [str(w) for w in (command or []) + (args or []) if w is not None]
    words, unknown_vars = _expand_kubernetes(raw, env, outside)
    key = "command" if command else "args"
    line = _line(root, *at, key)
    found = find_in_argv(words, origin=f"{name}:{line}", env=env)
    if not found and command is None and words and words[0].startswith("-"):
        # args alone, for an image whose entrypoint is the server: the words are its arguments
        found = find_in_argv(["python3", "-m", "sglang.launch_server", *words], origin=f"{name}:{line}", env=env)
    out = []
    for f in found:
        marks = {i: unknown_vars[w] for i, w in enumerate(f.words) if w in unknown_vars}
        for index, reason in f.unknown.items():  # a variable of `bash -c` set from outside
            var = re.match(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)", reason)
            if var and var.group(1) in outside:
                marks[index] = f"${var.group(1)}, from {outside[var.group(1)]}"
        out.append((f, line, where, marks))
    return out


def _expand_kubernetes(words: list[str], env: dict[str, str], outside: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """`$(VAR)` in command/args as the kubelet expands it: from the container's env (`$$` is a
    literal `$`); a variable set from outside the manifest makes the word unknown."""
    unknown: dict[str, str] = {}
    out = []
    for word in words:
        missing: list[str] = []

        def repl(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            var = match.group(1)
            if var in env:
                return env[var]
            missing.append(f"$({var}), from {outside[var]}" if var in outside else f"$({var}), not in the container's env (set by the cluster?)")
            return match.group(0)

        expanded = _k8s_var().sub(repl, word)
        if missing:
            unknown[expanded] = missing[0]
        out.append(expanded)
    return out, unknown


# ---------------------------------------------------------------------- docker-compose

def _compose(document: tuple[Any, Any], name: str, extra: dict[str, str]) -> tuple[list[Placed], str]:
    data, root = document
    commands: list[Placed] = []
    services = data.get("services") or {}
    if len(services) > MAX_CONTAINERS:
        raise InputError(name, "services", f"more than {MAX_CONTAINERS} services: not read")
    for service, spec in services.items():
        if not isinstance(spec, dict):
            continue
        entrypoint, command = spec.get("entrypoint"), spec.get("command")
        if entrypoint is None and command is None:
            continue
        env = dict(extra)
        environment = spec.get("environment")
        if isinstance(environment, dict):
            env.update({str(k): "" if v is None else str(v) for k, v in environment.items()})
        elif isinstance(environment, list):
            for item in environment:
                if isinstance(item, str) and "=" in item:
                    k, v = item.split("=", 1)
                    env[k] = v
        key = "entrypoint" if entrypoint is not None else "command"
        line = _line(root, "services", service, key)
        where = f"service {service}"
        origin = f"{name}:{line} ({where})"
        import shlex  # (compose's string form only)

        try:
            words = [w for p in (entrypoint, command) if p for w in (shlex.split(p) if isinstance(p, str) else [str(x) for x in p])]
        except ValueError as exc:  # an unclosed quote: compose refuses the file
            raise InputError(name, f"services.{service}.{key}", f"not words compose can split: {exc}") from None
        passed, unknown = _interpolate(words, extra, where)
        found = find_in_argv(passed, origin=origin, env=env)
        if not found and entrypoint is None and passed and passed[0].startswith("-"):  # the image's entrypoint is the server
            passed = ["python3", "-m", "sglang.launch_server", *passed]
            unknown = {i + 3: why for i, why in unknown.items()}
            found = find_in_argv(passed, origin=origin, env=env)
        for f in found:
            offset = len(passed) - len(f.words)
            suffix = tuple(passed[offset:]) == tuple(f.words)  # (else a `sh -c` string: the shell's own marks)
            marks = {i - offset: why for i, why in unknown.items() if suffix and i >= offset}
            commands.append((f, line, where, marks))
    return commands, f"the entrypoint + command of {len(services)} service{'s' if len(services) != 1 else ''}"


@functools.cache
def _compose_var() -> re.Pattern[str]:
    return re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _interpolate(words: list[str], given: dict[str, str], where: str) -> tuple[list[str], dict[int, str]]:
    """Compose's `${VAR}` interpolation, done from the host environment or `.env` before the
    container starts: a variable given with `--env` is replaced (its plain `$VAR`/`${VAR}` form),
    any other makes its word unknown; `$$` is a literal `$`."""
    unknown: dict[int, str] = {}
    out = []
    for index, word in enumerate(words):

        def one(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            var = match.group(1) or match.group(2)
            if var in given and (match.group(2) or match.group(0) == "${" + var + "}"):
                return given[var]
            unknown.setdefault(index, f"${{{var}}}, interpolated by compose from the host or .env ({where})")
            return match.group(0)

        out.append(_compose_var().sub(one, word))
    return out, unknown


# ------------------------------------------------------------------------------ SkyPilot

def _skypilot(document: tuple[Any, Any], name: str, extra: dict[str, str]) -> list[Placed]:
    data, root = document
    env = dict(extra)
    envs = data.get("envs")
    if isinstance(envs, dict):
        for k, v in envs.items():
            if v is not None:  # an env without a value is given at launch (`--env`): unknown
                env.setdefault(str(k), str(v))
    node = _node(root, "run")
    text = data["run"]
    # Where the script starts: the line after `run: |` for a block scalar.
    first = node.start_mark.line + 1 + (1 if getattr(node, "style", None) in ("|", ">") else 0)
    found = find_commands(text, origin=f"{name} (run:)", env=env)
    return [(f, first + f.line - 1, "run:", None) for f in found]


# ---------------------------------------------------------------------------- Dockerfile

def dockerfile_commands(text: str, name: str, extra: dict[str, str]) -> list[Placed]:
    """The sglang commands of a Dockerfile's last stage: its ENTRYPOINT and CMD, with its ENV."""
    import dockerfile

    lines = text.count("\n") + 1
    if lines > MAX_DOCKERFILE_LINES:  # Docker's parser takes seconds per 100,000 instructions
        raise InputError(name, "(file)", f"a Dockerfile of {lines} lines, more than the {MAX_DOCKERFILE_LINES}-line limit: not read")
    try:
        instructions = dockerfile.parse_string(text)
    except dockerfile.GoParseError as exc:
        raise InputError(name, "(file)", f"not a Dockerfile Docker can parse: {exc}") from None
    env_lines: list[str] = []
    entrypoint = cmd = None
    for ins in instructions:
        if ins.cmd == "FROM":
            env_lines, entrypoint, cmd = [], None, None  # a new stage starts from its base image
        elif ins.cmd == "ENV":
            values = ins.value
            env_lines += [f"export {values[i]}={values[i + 1]}" for i in range(0, len(values) - 1, 2) if is_name(values[i])]
        elif ins.cmd == "ENTRYPOINT":
            entrypoint, cmd = ins, None  # an ENTRYPOINT resets the CMD inherited
        elif ins.cmd == "CMD":
            cmd = ins
    runs = entrypoint or cmd
    if runs is None:
        return []
    env_lines = _needed(env_lines, " ".join([*runs.value, *(cmd.value if cmd is not None and cmd is not runs else ())]))
    env = _dockerfile_env(env_lines, name, extra)
    origin = f"{name}:{runs.start_line}"
    where = runs.cmd
    if not runs.json:  # shell form: `/bin/sh -c STRING` (a CMD after a shell ENTRYPOINT is ignored)
        found = find_commands("\n".join([*env_lines, runs.value[0]]), origin=origin, env=extra)
    else:
        words = list(runs.value)
        if entrypoint is not None and cmd is not None:  # the CMD's words are the ENTRYPOINT's arguments
            words += list(cmd.value) if cmd.json else ["/bin/sh", "-c", cmd.value[0]]
            where = "ENTRYPOINT + CMD"
        found = find_in_argv(words, origin=origin, env=env)
    return [(f, runs.start_line, where, None) for f in found]


def _needed(env_lines: list[str], command: str) -> list[str]:
    """The ENV lines the command can see a difference from: the variables it names (and those
    their values name), and the SGLANG_* switches the checker reads; a Dockerfile's other ENV
    lines are never read through the shell grammar (a file of 100,000 of them stays fast)."""
    by_name = {line[len("export ") :].split("=", 1)[0]: line for line in env_lines}
    wanted = {n for n in by_name if n.startswith("SGLANG_")}
    text, seen = command, set()
    while True:
        named = {n for n in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", text) if n in by_name} - seen
        if not named:
            break
        seen |= named
        text = " ".join(by_name[n] for n in named)
    keep = wanted | seen
    return [line for line in env_lines if line[len("export ") :].split("=", 1)[0] in keep]


def _dockerfile_env(env_lines: list[str], name: str, extra: dict[str, str]) -> dict[str, str]:
    """ENV values as Docker processes them (quotes, `$VAR`): read with the shell grammar from
    `export` lines ahead of a stand-in command."""
    if not env_lines:
        return dict(extra)
    found = find_commands("\n".join([*env_lines, "python3 -m sglang.launch_server"]), origin=name, env=extra)
    return dict(found[-1].env) if found else dict(extra)


# ------------------------------------------------------------------------- list of words

def _words(data: list[Any], name: str, extra: dict[str, str]) -> list[Placed]:
    words = [str(w) for w in data]
    found = find_in_argv(words, origin=name, env=extra)
    if not found and words and words[0].startswith("-"):
        return [(FoundCommand(tuple(words), 1, MappingProxyType(dict(extra))), 1, "", None)]
    return [(f, 1, "", None) for f in found]
