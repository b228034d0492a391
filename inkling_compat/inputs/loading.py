"""Reading inputs from files, dicts or models into the typed inputs, with clear errors.

Unusable input raises `InputError(file, field, reason)`. Keys our formats do not know are
not errors here: they are collected (with a "did you mean" suggestion) and reported as
problems by the `unknown-config-key` rule, so a typo never passes silently.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import stat

from inkling_compat.errors import InputError
from inkling_compat.inputs import path_text, stdin
from inkling_compat.inputs.limits import (
    MAX_DEPTH,
    MAX_EXPANDED_NODES,
    MAX_YAML_ALIASES,  # noqa: F401 - the caps, named where inputs are read
    LimitExceeded,
    check_data,
    json_values,
    long_layer_reason,
    scan_json,
)
from inkling_compat.inputs.models import (
    PLATFORM_PRESETS,
    LoraRef,
    ModelConfig,
    PeftManifest,
    Platform,
    PoolManifest,
    ServerConfig,
    _Input,
    field_records,
    from_validated,
    read,
)

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    M = TypeVar("M")

MAX_INPUT_BYTES = 16 * 1024 * 1024


# Parsed YAML and JSON inputs by text, kept only once their limits held. The file is read every
# time and looked up by its whole content, so an edited file is parsed again whatever its mtime;
# the cache only spares a process that checks the same files again (an API user, a server) the
# parse and the limits walk. Entries
# are the data as JSON text (each hit returns fresh objects), only for data JSON holds
# exactly; bounded in count and size. INKLING_COMPAT_NO_CACHE=1 turns it off.
_PARSED: dict[tuple[bool, str], str] = {}
_PARSED_MAX_ENTRIES = 256
_PARSED_MAX_TEXT = 64 * 1024


def _yaml_data(text: str) -> Any:
    """A YAML document's data, its limits checked (the parsed-text cache: checked once)."""
    from inkling_compat.inputs import yaml_read

    return _cached(text, False, yaml_read.parse_yaml)


def _json_data(raw: bytes, text: str) -> Any:
    """A JSON document's data, its limits checked (the parsed-text cache: checked once)."""
    return _cached(text, True, lambda text: _parse_json(raw, text))


def _parse_json(raw: bytes, text: str) -> Any:
    # The value count first (before json builds them, and before scan_json's exact walk,
    # which a long list of digits takes; docs/performance.md has the cost without it).
    if json_values(raw) > MAX_EXPANDED_NODES:
        raise LimitExceeded("(root)", f"more than {MAX_EXPANDED_NODES} values")
    scan_json(raw)  # depth and number limits before json recurses or converts
    data = json.loads(text, object_pairs_hook=_unique_pairs)
    check_data(data, count_limit=MAX_EXPANDED_NODES)  # lone surrogates ("\ud800") and the value cap
    return data


def _cached(text: str, is_json: bool, parse: Any) -> Any:
    # Keyed by the parser too: one text can read differently as YAML and as JSON ("1e999").
    cacheable = len(text) <= _PARSED_MAX_TEXT and os.environ.get("INKLING_COMPAT_NO_CACHE", "") in ("", "0")
    hit = _PARSED.get((is_json, text)) if cacheable else None
    if hit is not None:
        return json.loads(hit)
    data = parse(text)
    if cacheable:
        try:
            dumped = json.dumps(data, allow_nan=False)
            if json.loads(dumped) == data:  # e.g. integer keys or dates would not come back
                if len(_PARSED) >= _PARSED_MAX_ENTRIES:
                    _PARSED.clear()
                _PARSED[(is_json, text)] = dumped
        except (TypeError, ValueError, RecursionError):
            pass
    return data


def read_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A YAML or JSON file as a mapping, or an InputError naming the file."""
    if stdin.is_stdin(path):  # `--config -`: the same parsing and limits, YAML (JSON is YAML)
        return parse_document(stdin.read_bytes(MAX_INPUT_BYTES), stdin.NAME, is_json=False)
    name = path_text.shown(path)  # (as `str(Path(path))` names it)
    return parse_document(read_capped(name), name, is_json=path_text.suffix(name) == ".json")


def read_capped(path: str | os.PathLike[str], expected: str = "a YAML or JSON file") -> bytes:
    """A file's bytes, at most MAX_INPUT_BYTES: a FIFO or socket is refused unopened for
    reading, a device or a growing file is read to one byte past the cap and refused; every
    failure an InputError naming the file."""
    name = path = path_text.shown(path)
    try:  # one open and one fstat: a check reads three of these
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever (it is
        # refused below, once fstat says what it is); regular files ignore the flag. The
        # descriptor is read as it is (a file object around it costs more per file).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
                raise InputError(name, "(file)", "is a FIFO or socket, not a file: never read (it could block or never end)")
            if info.st_size > MAX_INPUT_BYTES:
                raise InputError(name, "(file)", f"{info.st_size} bytes is more than the {MAX_INPUT_BYTES}-byte limit")
            # A device reports size 0 (/dev/null reads as empty; /dev/zero would never end):
            # at most one byte past the limit is read from anything.
            # A regular file: its size and one byte more (read(n) allocates n bytes first:
            # asking for the whole cap is slower), then the rest up to the cap only
            # if it grew meanwhile.
            raw = _read_up_to(fd, info.st_size + 1 if 0 < info.st_size else MAX_INPUT_BYTES + 1)
            if 0 < info.st_size < len(raw):
                raw += _read_up_to(fd, MAX_INPUT_BYTES + 1 - len(raw))
            if len(raw) > MAX_INPUT_BYTES:
                raise InputError(name, "(file)", f"more than the {MAX_INPUT_BYTES}-byte limit (a device or a growing file?)")
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise InputError(name, "(file)", "no such file") from None
    except IsADirectoryError:
        raise InputError(name, "(file)", f"is a directory, expected {expected}") from None
    except OSError as exc:
        raise InputError(name, "(file)", f"cannot read: {exc.strerror}") from None
    except ValueError:  # os.open of a path holding a NUL (no file can have one)
        raise InputError(name, "(file)", "the path holds a NUL character: no such file") from None
    return raw


def parse_document(raw: bytes, name: str, is_json: bool) -> dict[str, Any]:
    """A document's bytes (read under the byte cap) as a mapping, or an InputError naming `name`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(name, "(file)", "not UTF-8 text") from None
    if "\r" in text:  # as read_text's universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if is_json:
        try:
            data = _json_data(raw, text)
        except LimitExceeded as exc:
            if exc.reason.startswith("more than"):
                raise InputError(name, "(json)", _too_many("json")) from None
            raise InputError(name, exc.path, exc.reason) from None
        except _JsonDuplicate as exc:
            raise _json_duplicate(name, text, exc.key) from None
        except json.JSONDecodeError as exc:
            raise InputError(name, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    else:
        data = _yaml_document(name, text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(name, "(root)", f"expected a mapping, got {type(data).__name__}")
    return data


def _yaml_document(name: str, text: str) -> Any:
    """A YAML document's data, or the InputError naming `name` and where."""
    import yaml

    from inkling_compat.inputs.yaml_read import (
        DuplicateKey,
        ExpandsTooFar,
        TooManyNodes,
    )

    try:
        return _yaml_data(text)
    except LimitExceeded as exc:
        if exc.reason.startswith("more than"):
            # YAML's nodes were counted while composing: only aliases reach this cap
            raise InputError(name, "(yaml)", f"expands to more than {MAX_EXPANDED_NODES} values (YAML alias bomb?)") from None
        raise InputError(name, exc.path, exc.reason) from None
    except TooManyNodes:
        raise InputError(name, "(yaml)", _too_many("yaml")) from None
    except DuplicateKey as exc:
        raise InputError(name, exc.path, f"duplicate key {exc.key!r} (lines {exc.first_line} and {exc.second_line}): say it once") from None
    except ExpandsTooFar:
        raise InputError(name, "(yaml)", f"expands to more than {MAX_EXPANDED_NODES} values (YAML alias bomb?)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(yaml)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(name, where, f"malformed YAML: {problem}") from None


def _too_many(kind: str) -> str:
    return f"more than {MAX_EXPANDED_NODES} values (keys count) in this {kind.upper()} document: a config holds far fewer"


def _read_up_to(fd: int, size: int) -> bytes:
    """`size` bytes of `fd`, fewer only at its end (a read may return less than it was asked)."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class _JsonDuplicate(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a dict, unless a key repeats (json keeps the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _JsonDuplicate(key)
            seen.add(key)
    return out


def _json_duplicate(name: str, text: str, key: str) -> InputError:
    """The InputError for a JSON object stating `key` twice, with both lines: the json module
    keeps no positions, so the (valid JSON, hence YAML flow) text is composed by libyaml to
    find them; where that fails, the key alone is named."""
    import yaml

    from inkling_compat.inputs.yaml_read import compose, duplicate_key

    try:
        root = compose(text)
        found = duplicate_key(root) if root is not None else None
    except yaml.YAMLError:
        found = None
    if found is None:
        return InputError(name, key, f"duplicate key {key!r}: say it once")
    return InputError(name, found.path, f"duplicate key {found.key!r} (lines {found.first_line} and {found.second_line}): say it once")


# A "did you mean" is difflib against every known key, per unknown key: only the
# first MAX_SUGGESTED unknown keys of a document get one, so 20,000 of them stay linear and fast.
MAX_SUGGESTED = 100


def unknown_keys(model: type[_Input], data: dict[str, Any], prefix: str = "", _found: list[dict[str, str]] | None = None) -> list[dict[str, str]]:
    """Keys of `data` that `model` forbids, with the closest known key as a suggestion."""
    found: list[dict[str, str]] = [] if _found is None else _found
    fields = _field_models(model)
    if fields is None:
        return found
    known = None
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key not in fields:
            close: list[str] = []
            if len(found) < MAX_SUGGESTED:
                import difflib  # only for an unknown key: most checks have none (and it costs at start-up)

                known = known if known is not None else list(fields)
                close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            found.append({"key": path, "suggestion": f"{prefix}{close[0]}" if close else ""})
            continue
        sub = fields[key]
        if sub is not None and isinstance(value, dict):
            unknown_keys(sub, value, f"{path}.", found)
    return found


def _strip_unknown(model: type[_Input], data: dict[str, Any]) -> dict[str, Any]:
    fields = _field_models(model)
    if fields is None:
        return data
    kept = {}
    for key, value in data.items():
        if key not in fields:
            continue
        sub = fields[key]
        kept[key] = _strip_unknown(sub, value) if sub is not None and isinstance(value, dict) else value
    return kept


@functools.lru_cache(maxsize=64)
def _field_models(model: type[_Input]) -> dict[str, type[_Input] | None] | None:
    """Field name -> the record it nests directly or as Optional (or None), for a record that
    forbids unknown keys; None for one that allows them. Read once per record class, not per check."""
    if model._extra != "forbid":
        return None
    return field_records(model)


def validate(model: type[M], data: dict[str, Any], file: str) -> M:
    """`data` as the record `model`: read as it is where every value already is of its field's
    type (inputs/models.py `read`: no pydantic), else validated by the pydantic model of the
    same name (inputs/input_schema.py), its first error an InputError for `file`."""
    kept = _strip_unknown(model, data)  # type: ignore[arg-type]
    record = read(model, kept)
    if record is not None:
        return record  # type: ignore[no-any-return]
    from pydantic import ValidationError

    from inkling_compat.inputs import input_schema

    try:
        return from_validated(input_schema.pydantic_models(sys.modules[model.__module__])[model.__name__].model_validate(kept))  # type: ignore[no-any-return]
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        reason = err["msg"]
        if err["type"] == "missing":  # most often a misspelt key: name it ("did you mean")
            typo = next((u["key"] for u in unknown_keys(model, data) if u["suggestion"] == field), None)  # type: ignore[arg-type]
            if typo is not None:
                reason += f" ({typo.rsplit('.', 1)[-1]!r} is there: did you mean {field.rsplit('.', 1)[-1]!r}?)"
        raise InputError(file, field, reason) from None


def _as_mapping(source: Any, label: str) -> tuple[dict[str, Any], str]:
    if isinstance(source, (str, os.PathLike)):
        return read_document(source), str(source)
    if isinstance(source, dict):
        try:  # a caller's dict gets the limits a file gets (inputs/limits.py); the count cap
            # is for shared sub-objects (a DAG walked as a tree doubles per level)
            check_data(source, count_limit=5 * MAX_EXPANDED_NODES)
        except LimitExceeded as exc:
            raise InputError(label, exc.path, exc.reason) from None
        return source, label
    raise InputError(label, "(root)", f"expected a path, a dict or a model, got {type(source).__name__}")


def _validated(source: Any, *classes: type) -> Any:
    """`source` as a record of one of `classes`: the record itself, or the record of a model of
    the same name validated by pydantic (inputs/input_schema.py); None for anything else."""
    if isinstance(source, classes):
        return source
    if hasattr(source, "__pydantic_fields__") and type(source).__name__ in {c.__name__ for c in classes}:
        return from_validated(source)
    return None


ARGPARSE_REFUSES = "sglang's argparse refuses it: "


def server_config_or_refusal(source: Any) -> tuple[ServerConfig, list[dict[str, str]], tuple[dict[str, Any], ...], str | None]:
    """`load_server_config`, where a value of the server config that sglang's own argparse
    refuses (a choice it lacks, a text its `type` cannot convert) is sglang's refusal, as in a
    launch command: a problem of the deployment (`input.refusals`, exit 1), and sglang parses
    nothing further, so the config is sglang's defaults. Other unusable input still raises.
    The last value: the LoRA argument whose refused choice sglang stops at, its rule's to report
    (`sort_arguments`), or None."""
    try:
        server, found, stop = _server_config(source)
    except InputError as exc:
        if not exc.reason.startswith(ARGPARSE_REFUSES):
            raise
        from inkling_compat.inputs import refusals

        message = exc.reason[len(ARGPARSE_REFUSES):]
        refusal = refusals.item("", message, "SystemExit", exc.file, exc.field)
        refusal.update(refusals.argparse_refusal(message))
        return ServerConfig(), [], (refusal,), None
    return server, found, (), stop


def load_server_config(source: Any) -> tuple[ServerConfig, list[dict[str, str]]]:
    server, found, _ = _server_config(source)
    return server, found


def _server_config(source: Any) -> tuple[ServerConfig, list[dict[str, str]], str | None]:
    given = _validated(source, ServerConfig)
    if given is not None:
        return given, [], None
    if source is None:
        return ServerConfig(), [], None
    as_data = getattr(source, "server_config_data", None)
    if callable(as_data):  # a launch command (inputs/launch.Launch), already parsed as sglang parses it (its refusals: Inputs.refusals)
        return validate(ServerConfig, as_data(), source.label), [], None
    try:
        data, file = _as_mapping(source, "<config>")
    except InputError as exc:
        _refuse_deployment_stream(source, exc)
        raise
    if isinstance(source, (str, os.PathLike)):
        from inkling_compat.inputs.deployment_kind import foreign_kind

        kind = foreign_kind(data)
        if kind is not None:  # named, never dumped as unknown keys (its environment holds secrets)
            raise InputError(file, "(root)", f"{kind}, not a server config: give it with --launch")
    # Every key as the release's argparse reads it (a typed field's choices are the release's
    # own; a list or mapping is what sglang's merger makes of it), typed fields included.
    from inkling_compat.inputs.server_arguments import sort_arguments

    data, found, stop = sort_arguments(data, file)
    found += [dict(item, file=file) for item in unknown_keys(ServerConfig, data)]
    return validate(ServerConfig, data, file), found, stop


def yaml_documents(text: str, name: str) -> list[tuple[Any, Any]] | None:
    """[(data, root node)] of each document, under the caps every YAML input has; None when the
    text is not YAML at all (a shell script)."""
    import yaml

    from inkling_compat.inputs.limits import LimitExceeded, check_data
    from inkling_compat.inputs.yaml_read import (
        _LIBYAML,
        _LOADER,
        _NOT_PLAIN,
        TooManyNodes,
        _plain_tree,
        load_yaml,
    )

    loader = _LOADER(text)
    roots = []
    try:
        while loader.check_node():
            roots.append(loader.get_node())
    except TooManyNodes:
        raise InputError(name, "(yaml)", f"more than {MAX_EXPANDED_NODES} values") from None
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    out = []
    for root in roots:
        try:
            # The usual document in one walk (no alias, no duplicate key, within every limit), as
            # yaml_read.parse_yaml reads one; anything else through the checks that word it.
            data = _plain_tree(root, MAX_DEPTH, checked=True) if _LIBYAML else _NOT_PLAIN
            if data is _NOT_PLAIN:
                data, _ = load_yaml(text, MAX_DEPTH, root=root)
                check_data(data, count_limit=2 * MAX_EXPANDED_NODES)
        except LimitExceeded as exc:
            raise InputError(name, exc.path, exc.reason) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(root, "start_mark", None)
            raise InputError(name, f"line {mark.line + 1}" if mark else "(yaml)", f"malformed YAML: {getattr(exc, 'problem', None) or exc}") from None
        if data is not None:
            out.append((data, root))
    if not out or all(isinstance(d, (str, int, float, bool)) for d, _ in out):
        return None  # plain text that YAML reads as one scalar: a script
    return out


def _refuse_deployment_stream(source: Any, exc: InputError) -> None:
    """A multi-document Kubernetes stream given as a server config: named (as `--launch` input)."""
    if not isinstance(source, (str, os.PathLike)) or "another document" not in exc.reason:
        return
    from inkling_compat.inputs.deployment_kind import KUBERNETES, kubernetes_object
    from inkling_compat.inputs.limits import read_bounded

    try:
        raw = (stdin.already_read() or b"") if stdin.is_stdin(source) else read_bounded(source, MAX_INPUT_BYTES)
        documents = yaml_documents(raw.decode("utf-8"), str(source)) or []
    except (InputError, UnicodeDecodeError):
        return  # not a stream we can name: the original error stands
    if any(kubernetes_object(d) for d, _ in documents):
        raise InputError(exc.file, "(root)", f"{KUBERNETES} (a stream of {len(documents)} documents), not a server config: give it with --launch") from None


def load_model_config(source: Any) -> ModelConfig:
    given = _validated(source, ModelConfig)
    if given is not None:
        return given  # type: ignore[no-any-return]
    if source is None:
        return ModelConfig()
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):  # a Hugging Face model folder (os.path: no Path object per check)
        folder, source = source, path_text.shown(os.path.join(path_text.shown(source), "config.json"))  # (`Path(source) / "config.json"`)
        if not path_text.is_file(source):
            raise InputError(str(folder), "(file)", "is a directory without config.json (expected the model's config.json or its folder)")
    data, file = _as_mapping(source, "<model>")
    # Multimodal Inkling configs nest the text model; quantization may sit at either level, and
    # the MTP block and the audio/vision towers sit at the top.
    if isinstance(data.get("text_config"), dict):
        merged = dict(data["text_config"])
        for key in ("architectures", "quantization_config", "mtp_config", "audio_config", "vision_config"):
            if key in data and key not in merged:
                merged[key] = data[key]
        data = merged
    return validate(ModelConfig, data, file)


def load_platform(source: Any) -> tuple[Platform, list[dict[str, str]]]:
    given = _validated(source, Platform)
    if given is not None:
        return given, []
    if source is None:
        return Platform(), []
    if isinstance(source, str) and source.lower() in PLATFORM_PRESETS:
        return Platform(**PLATFORM_PRESETS[source.lower()]), []
    data, file = _as_mapping(source, "<platform>")
    found = [dict(item, file=file) for item in unknown_keys(Platform, data)]
    return validate(Platform, data, file), found


def load_adapter(
    source: Any, lora_paths: Any = None
) -> tuple[PoolManifest | PeftManifest, list[dict[str, str]]]:
    """A manifest (pool or PEFT form) from a model, a dict, a YAML/JSON file or a PEFT adapter
    directory (read by `adapter_reader`; `lora_paths`, a list of entries or an
    lora_index.LoraPathIndex, names it by its --lora-paths entry)."""
    given = _validated(source, PoolManifest, PeftManifest)
    if given is not None:
        return given, []
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        from inkling_compat.inputs.adapter_dir import read_fleet

        return read_fleet([source], lora_paths=lora_paths)[0], []
    data, file = _as_mapping(source, "<adapter>")
    if "pool" in data:
        model: type[_Input] = PoolManifest
    elif "adapter_config" in data:
        model = PeftManifest
    else:
        raise InputError(file, "(root)", "an adapter manifest needs `pool:` (pool form) or `adapter_config:` (PEFT form)")
    found = [dict(item, file=file) for item in unknown_keys(model, data)]
    manifest = validate(model, data, file)
    if isinstance(manifest, PeftManifest):
        for name in manifest.tensors.root:  # names sglang's get_layer_id cannot convert
            reason = long_layer_reason(name)
            if reason is not None:
                raise InputError(file, f"tensors.{name[:60]}...", reason)
    return manifest, found  # type: ignore[return-value]

