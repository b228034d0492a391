"""PEFT adapter directories read without touching tensor bytes.

`read_adapter_dir(path)` turns a directory as PEFT's `save_pretrained` writes it into the
`PeftManifest` every adapter rule reads:

* `adapter_config.json` as is (sglang's `LoRAConfig` reads it with `json.load`,
  lora_config.py:75-85, and its own KeyError/type checks on it are rules);
* `added_tokens.json` if present (lora_config.py:87-108: a JSON syntax error there is only a
  warning in sglang, kept as `source.added_tokens_error`);
* the weights sglang's loader would pick (model_loader/loader.py `_prepare_weights`,
  l.480-582: every `*.safetensors` of the folder, else every `*.bin` (minus training files),
  else every `*.pt`): for safetensors files only the header is read, 8 bytes of little-endian
  length and that many bytes of JSON, never the tensor data. `*.bin`/`*.pt` are pickles and are
  **never unpickled**: the manifest then has no tensors and `source.weights_format` says so.

A directory that cannot be read (a file missing, unreadable, malformed, a header that is
corrupt or hostile, a symlink leaving the directory) still gives a manifest: one whose
`source.unreadable` names the file and the reason. The engine checks nothing else of such an
adapter and reports it through the `adapter-file-unreadable` rule, so one broken adapter
never stops a fleet check. Only a path that is not a directory at all raises `InputError`.

The safetensors header is validated the way the `safetensors` library validates it before
sglang could load the file (header length cap 100,000,000 bytes, UTF-8 JSON object, known
dtypes, non-negative shapes, offsets contiguous from 0 and covering the data exactly, byte
sizes matching shape x dtype), so an adapter this reader accepts is one `safe_open` accepts.
"""

from __future__ import annotations

import json
import os
import stat
from collections import OrderedDict
from _weakref import _remove_dead_weakref, ref as _weak_ref  # (built in; weakref.py's import costs ~0.5 ms)

from inkling_compat.errors import InputError
from inkling_compat.sglang.plain_dataclass import dataclass
from inkling_compat.inputs.limits import JsonScan, LimitExceeded, check_strings, long_layer_reason, may_have_long_layer_ids, scan_json
from inkling_compat.inputs.lora_index import LoraPathIndex
from inkling_compat.inputs.models import AdapterSource, LoraRef, PeftManifest, TensorSpec, TensorTable

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

# safetensors' own cap on the header (safetensors/src/tensor.rs MAX_HEADER_SIZE).
MAX_HEADER_BYTES = 100_000_000
# What this reader parses of a header: 16 MiB and 100,000 tensors. A LoRA adapter of an
# Inkling model has a few thousand tensors (layers x targets x 2 factors, x experts when its
# shared-sink factors are numbered), about 100 bytes of header each. A larger header, legal
# for safetensors up to 100 MB, is an adapter this checker does not check (its problem, in
# constant time: only the 8-byte length is read); reading it would cost time and memory in
# proportion (figures in docs/performance.md, "Figures behind the code's choices").
MAX_READ_HEADER_BYTES = 16 * 1024 * 1024
MAX_TENSORS = 100_000
# adapter_config.json / added_tokens.json: the loader's cap on input documents.
MAX_JSON_BYTES = 16 * 1024 * 1024
_U64_MAX = 2**64 - 1
# A safetensors header may hold any u64 dimension, but torch sizes are int64: torch cannot
# build a tensor with a larger axis (even one of zero elements), so neither can sglang's loader.
_I64_MAX = 2**63 - 1
CONFIG_NAME = "adapter_config.json"
ADDED_TOKENS_NAME = "added_tokens.json"
# model_loader/weight_utils.filter_files_not_needed_for_inference
_NOT_WEIGHTS = ("training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")

# safetensors dtype -> (bits per element, the torch name TensorSpec uses).
DTYPES: dict[str, tuple[int, str]] = {
    "BOOL": (8, "bool"),
    "F4": (4, "float4_e2m1fn_x2"),
    "F6_E2M3": (6, "float6_e2m3"),
    "F6_E3M2": (6, "float6_e3m2"),
    "U8": (8, "uint8"),
    "I8": (8, "int8"),
    "F8_E5M2": (8, "float8_e5m2"),
    "F8_E4M3": (8, "float8_e4m3fn"),
    "F8_E8M0": (8, "float8_e8m0fnu"),
    "I16": (16, "int16"),
    "U16": (16, "uint16"),
    "F16": (16, "float16"),
    "BF16": (16, "bfloat16"),
    "I32": (32, "int32"),
    "U32": (32, "uint32"),
    "F32": (32, "float32"),
    "C64": (64, "complex64"),
    "F64": (64, "float64"),
    "I64": (64, "int64"),
    "U64": (64, "uint64"),
}


class AdapterFileError(Exception):
    """One file of an adapter directory cannot be used; `file` is relative to the adapter."""

    def __init__(self, file: str, reason: str):
        self.file = file
        self.reason = reason
        super().__init__(f"{file}: {reason}")


@dataclass(frozen=True)
class _Key:
    """What identifies a file's content for the header cache (path, size, mtime, inode, and
    ctime: a rewrite in place that keeps size and mtime, `os.utime` included, still moves the
    change time, which no user call can set back)."""

    path: str
    size: int
    mtime_ns: int
    inode: int
    ctime_ns: int = 0


# The header cache keeps validated headers within a byte budget, least recently used out
# first. By header bytes (a digest of them): adapters of one training recipe have
# byte-identical headers (same names, shapes, dtypes, offsets), parsed and validated once per
# fleet. By file identity: a fleet re-checked in one process (an API user, a server) reads
# each unchanged weights file once. A header's cost is 4 x its JSON bytes: the bytes
# themselves (the key; comparing them is cheaper than hashing them again) and what they
# become (measured: the parsed names and shape tuples take 2.3 x, the interned TensorTable
# 0.6 x more); a header over the whole budget is not kept. 64 MiB hold ~2,000 adapters of
# 64 tensors (8 KB headers), ~600 of the 224-tensor ones in benchmarks/bench_fleet.py.
HEADER_CACHE_BYTES = 64 * 1024 * 1024
_COST_PER_HEADER_BYTE = 4
_BY_FILE_MAX = 4096


class _HeaderCache:
    """Headers by content (`(raw bytes, data size)`) in LRU order within `budget` bytes of
    cost, and file identity -> content for the files read; a file entry goes when its
    content does (it holds the raw bytes), so the budget bounds both."""

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        # content -> (header, cost, the file keys naming it)
        self._by_content: OrderedDict[tuple[bytes, int], tuple["_Header", int, list[_Key]]] = OrderedDict()
        self._by_file: dict[_Key, tuple[bytes, int]] = {}

    def by_file(self, key: _Key) -> "_Header | None":
        content = self._by_file.get(key)
        return None if content is None else self.by_content(content)

    def by_content(self, content: tuple[bytes, int]) -> "_Header | None":
        hit = self._by_content.get(content)
        if hit is None:
            return None
        self._by_content.move_to_end(content)
        return hit[0]

    def put(self, key: _Key, content: tuple[bytes, int], header: "_Header", cost: int) -> None:
        if cost > self.budget:
            return
        entry = self._by_content.get(content)
        if entry is None:
            entry = self._by_content[content] = (header, cost, [])
            self.used += cost
            while self.used > self.budget:
                _, (_, old_cost, old_files) = self._by_content.popitem(last=False)
                self.used -= old_cost
                for old in old_files:
                    self._by_file.pop(old, None)
        if key not in self._by_file:
            if len(self._by_file) >= _BY_FILE_MAX:
                self._by_file.clear()  # a stale file key in a content entry only misses
                for _, _, files in self._by_content.values():
                    files.clear()
            self._by_file[key] = content
            entry[2].append(key)

    def clear(self) -> None:
        self._by_content.clear()
        self._by_file.clear()
        self.used = 0

    def __len__(self) -> int:
        return len(self._by_content)


_HEADERS = _HeaderCache(HEADER_CACHE_BYTES)


class _Header:
    """A validated header and, once built, the interned TensorTable of a one-file adapter."""

    __slots__ = ("tensors", "table")

    def __init__(self, tensors: dict[str, tuple[tuple[int, ...], str]]):
        self.tensors = tensors
        self.table: TensorTable | None = None


# --- paths ------------------------------------------------------------------------------


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


class _LinkRoot(str):
    """A folder's real path whose links may point anywhere inside a larger folder, `links`
    (a snapshot of the Hugging Face cache: its files link into the repository's blobs/)."""

    links: str

    def __new__(cls, real: str, links: str) -> "_LinkRoot":
        out = super().__new__(cls, real)
        out.links = links
        return out


def _resolve_inside(path: str, root_real: str, label: str) -> str:
    """The real path of `path`, a direct child of the folder whose real path is `root_real`,
    refusing symlink loops and links that leave `root_real` (or its `links` folder)."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return os.path.join(root_real, os.path.basename(path))  # a plain entry of the folder
    except OSError as exc:
        raise AdapterFileError(label, _os_reason(exc)) from None
    except ValueError as exc:  # an embedded NUL
        raise AdapterFileError(label, f"cannot resolve: {exc}") from None
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise AdapterFileError(label, "symlink loop") from None
        if os.path.islink(path):
            raise AdapterFileError(label, f"dangling symlink to {os.readlink(path)!r}") from None
        raise AdapterFileError(label, _os_reason(exc)) from None
    except (RuntimeError, ValueError) as exc:  # RuntimeError: older pathlib loops; ValueError: NUL
        raise AdapterFileError(label, f"cannot resolve: {exc}") from None
    if not _inside(real, getattr(root_real, "links", root_real)):
        raise AdapterFileError(label, f"symlink points outside the adapter directory (to {real})")
    return real


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _regular_file(real: str, label: str) -> os.stat_result:
    try:
        info = os.stat(real)
    except OSError as exc:
        raise AdapterFileError(label, f"cannot stat: {_os_reason(exc)}") from None
    if stat.S_ISDIR(info.st_mode):
        raise AdapterFileError(label, "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        # FIFOs, sockets and devices could block or never end: never opened.
        raise AdapterFileError(label, "is not a regular file (FIFO, socket or device)")
    return info


def _read_bytes(real: str, label: str, start: int, count: int) -> bytes:
    try:
        with open(real, "rb") as handle:
            handle.seek(start)
            data = handle.read(count)
    except OSError as exc:
        raise AdapterFileError(label, f"cannot read: {_os_reason(exc)}") from None
    if len(data) != count:
        raise AdapterFileError(label, f"file shrank while reading (expected {count} bytes at offset {start}, got {len(data)})")
    return data


# --- JSON documents -----------------------------------------------------------------------


def read_json_file(path: str, root_real: str, label: str, limit: int = MAX_JSON_BYTES) -> Any:
    """A small JSON document of the adapter (adapter_config.json, added_tokens.json)."""
    real = _resolve_inside(path, root_real, label)
    info = _regular_file(real, label)
    if info.st_size > limit:
        raise AdapterFileError(label, f"{info.st_size} bytes is more than the {limit}-byte limit")
    raw = _read_bytes(real, label, 0, info.st_size)
    return parse_json(raw, label)


def _no_lone_surrogates(doc: Any, scan: Any, label: str) -> None:
    """An AdapterFileError naming the path of the first key or string with a lone surrogate,
    when the raw scan saw a surrogate escape (only then is the parsed document walked)."""
    if scan.maybe_surrogates:
        try:
            check_strings(doc)
        except LimitExceeded as exc:
            raise AdapterFileError(label, f"{exc.path}: {exc.reason}") from None


def parse_json(raw: bytes, label: str) -> Any:
    """JSON bytes of the adapter, measured first (inputs/limits.py: nesting, long numbers,
    lone surrogates)."""
    return _parse_json(raw, label)[0]


def _parse_json(raw: bytes, label: str, max_objects: int | None = None, what: str = "objects", overhead: int = 0) -> tuple[Any, JsonScan]:
    """parse_json, and what scan_json measured; with `max_objects`, refused when the text
    holds more JSON objects than that plus `overhead` (objects that are not `what`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AdapterFileError(label, f"not UTF-8 text (byte {exc.start})") from None
    try:
        scan = scan_json(raw)
    except LimitExceeded as exc:
        raise AdapterFileError(label, f"{exc.path}: {exc.reason}") from None
    if max_objects is not None and scan.objects - overhead > max_objects:
        raise AdapterFileError(label, f"more than {max_objects:,} {what} ({scan.objects - overhead:,}): more than this checker reads (not checked)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AdapterFileError(label, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except (RecursionError, ValueError) as exc:  # not reached after scan_json; kept as the last word
        raise AdapterFileError(label, f"invalid JSON: {exc}") from None
    _no_lone_surrogates(doc, scan, label)
    return doc, scan


# --- safetensors headers --------------------------------------------------------------------


def read_safetensors_header(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> dict[str, tuple[list[int], str]]:
    """Tensor name -> (shape, safetensors dtype) from a safetensors file's header only.

    Raises `AdapterFileError` with the reason for anything `safetensors` would refuse, and
    for a symlink leaving `root` (default: the file's folder). Reads at most 8 + header bytes.
    """
    path = os.fspath(path)
    root_real = os.path.realpath(os.fspath(root) if root is not None else os.path.dirname(os.path.abspath(path)))
    return {name: (list(shape), dtype) for name, (shape, dtype) in _header(path, root_real).tensors.items()}


def _header(path: str, root_real: str) -> _Header:
    label = os.path.basename(path)
    real = _resolve_inside(path, root_real, label)
    info = _regular_file(real, label)
    key = _Key(real, info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
    caching = _caching()
    cached = _HEADERS.by_file(key) if caching else None
    if cached is not None:
        return cached
    size = info.st_size
    if size < 8:
        raise AdapterFileError(label, f"{size} bytes: too short for a safetensors file (8-byte header length missing)")
    try:
        with open(real, "rb") as handle:
            head = handle.read(8)
            if len(head) != 8:
                raise AdapterFileError(label, "file shrank while reading")
            length = int.from_bytes(head, "little")  # (safetensors: a little-endian u64)
            if length > MAX_HEADER_BYTES:
                raise AdapterFileError(label, f"header length {length} is more than safetensors' {MAX_HEADER_BYTES}-byte limit")
            if length + 8 > size:
                raise AdapterFileError(label, f"header length {length} runs past the end of the {size}-byte file (truncated?)")
            if length > MAX_READ_HEADER_BYTES:
                raise AdapterFileError(
                    label,
                    f"header of {length:,} bytes is more than the {MAX_READ_HEADER_BYTES:,} bytes this checker reads "
                    f"(safetensors allows {MAX_HEADER_BYTES:,}; a LoRA adapter's header is far smaller): not checked",
                )
            raw = handle.read(length)
    except OSError as exc:
        raise AdapterFileError(label, f"cannot read: {_os_reason(exc)}") from None
    if len(raw) != length:
        raise AdapterFileError(label, f"file shrank while reading (expected {length} header bytes, got {len(raw)})")
    data_size = size - 8 - length
    if not caching:
        return _Header(parse_header(raw, data_size, label))
    content = (raw, data_size)
    header = _HEADERS.by_content(content)
    if header is None:
        header = _Header(parse_header(raw, data_size, label))
    _HEADERS.put(key, content, header, _COST_PER_HEADER_BYTE * length + 256)
    return header


def _caching() -> bool:
    """INKLING_COMPAT_NO_CACHE=1 turns the header caches off, like the other input caches
    (inputs/loading.py): every header is read, parsed and validated again (benchmarks of a
    first read; a process that must not trust file identity)."""
    return os.environ.get("INKLING_COMPAT_NO_CACHE", "") in ("", "0")


def clear_caches() -> None:
    """Forget every cached header and interned table (benchmarks; long-running processes)."""
    _HEADERS.clear()
    _TABLES.clear()
    _SPECS.clear()


def parse_header(raw: bytes, data_size: int, label: str = "header") -> dict[str, tuple[tuple[int, ...], str]]:
    """Validate a safetensors header (the JSON bytes) against a data section of `data_size`:
    tensor name -> (shape, safetensors dtype).

    Shapes are tuples: a fleet keeps every header it read (the caches), and tuples of ints
    are left alone by the cyclic garbage collector, which otherwise walks the ~450,000 shape
    lists of 1,000 adapters again and again during the check."""
    # One JSON object per tensor (plus the root and __metadata__), counted before parsing.
    overhead = 1 + (b'"__metadata__"' in raw)
    doc, scan = _parse_json(raw, label, max_objects=MAX_TENSORS, what="tensors in the header", overhead=overhead)
    if not isinstance(doc, dict):
        raise AdapterFileError(label, f"header is a JSON {type(doc).__name__}, expected an object")
    if scan.long_digit_runs and may_have_long_layer_ids(raw):
        for name in doc:
            reason = long_layer_reason(name)
            if reason is not None:
                raise AdapterFileError(label, reason)
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    position = 0  # where the next tensor must start while the entries come in offset order
    ordered = True
    bits_of = _BITS
    for name, entry in doc.items():
        if name == "__metadata__":  # optional: null or an object of strings (as safetensors reads it)
            if entry is not None and (not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values())):
                raise AdapterFileError(label, "__metadata__ must map strings to strings")
            continue
        # Fast path for a well-formed entry; anything odd is explained by _entry_error.
        try:
            dtype = entry["dtype"]
            shape = entry["shape"]
            offsets = entry["data_offsets"]
            if type(shape) is not list or type(offsets) is not list:
                raise ValueError
            begin, end = offsets
            if type(begin) is not int or type(end) is not int or begin < 0 or end < begin or end > _U64_MAX:
                raise ValueError
            numel = 1
            for d in shape:
                if type(d) is not int or d < 0 or d > _I64_MAX:  # (a 0 dim would hide a huge one)
                    raise ValueError
                numel *= d
            size = numel * bits_of[dtype]
            if size > _U64_MAX or size & 7 or end - begin != size >> 3:
                raise ValueError
        except (TypeError, KeyError, ValueError):
            raise AdapterFileError(label, _entry_error(name, entry)) from None
        if ordered and begin == position:
            position = end
        else:
            ordered = False
        out[name] = (tuple(shape), dtype)
    # safetensors: sorted by offsets, each tensor starts where the previous ended, from 0. The
    # library writes the entries in offset order, so that is checked on the way; any other
    # order is sorted here and checked again (same verdicts, same messages).
    if not ordered:
        spans = sorted((doc[name]["data_offsets"][0], doc[name]["data_offsets"][1], name) for name in out)
        position = 0
        for begin, end, name in spans:
            if begin != position:
                what = "overlaps the previous tensor" if begin < position else f"leaves a gap after byte {position}"
                raise AdapterFileError(label, f"tensor {name!r}: data_offsets [{begin}, {end}] {what}")
            position = end
    if position != data_size:
        raise AdapterFileError(
            label, f"tensors cover {position} data bytes but the file has {data_size} after the header (truncated or padded)"
        )
    return out


_BITS = {name: bits for name, (bits, _) in DTYPES.items()}


def _entry_error(name: str, entry: Any) -> str:
    """Why a header entry is not a valid tensor description (the slow, explaining path)."""
    if not isinstance(entry, dict):
        return f"tensor {name!r}: entry is a JSON {type(entry).__name__}, expected an object"
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    missing = [k for k, v in (("dtype", dtype), ("shape", shape), ("data_offsets", offsets)) if v is None]
    if missing:
        return f"tensor {name!r}: missing {', '.join(missing)}"
    if not isinstance(dtype, str) or dtype not in DTYPES:
        return f"tensor {name!r}: unknown dtype {_short(dtype)}"
    if not isinstance(shape, list) or not all(type(d) is int and 0 <= d <= _U64_MAX for d in shape):
        return f"tensor {name!r}: shape {_short(shape)} is not a list of non-negative 64-bit integers"
    past = next(((axis, d) for axis, d in enumerate(shape) if d > _I64_MAX), None)
    if past is not None:
        return (
            f"tensor {name!r}: dimension {past[1]} (axis {past[0]}) of shape {_short(shape)} is past torch's int64 sizes "
            f"(at most {_I64_MAX}): torch cannot build this tensor"
        )
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int and 0 <= o <= _U64_MAX for o in offsets):
        return f"tensor {name!r}: data_offsets {_short(offsets)} is not two non-negative 64-bit integers"
    begin, end = offsets
    numel = 1
    for d in shape:
        numel *= d
    bits = numel * DTYPES[dtype][0]
    if numel > _U64_MAX or bits > _U64_MAX:
        return f"tensor {name!r}: shape {_short(shape)} overflows 64 bits"
    if bits % 8:
        return f"tensor {name!r}: {numel} x {dtype} is not a whole number of bytes"
    if end < begin:
        return f"tensor {name!r}: data_offsets [{begin}, {end}] end before they begin"
    return f"tensor {name!r}: shape {_short(shape)} x {dtype} is {bits // 8} bytes but data_offsets [{begin}, {end}] span {end - begin}"


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- adapter directories -------------------------------------------------------------------


def as_text(name: str) -> str:
    """A file system name as text: the bytes that are not UTF-8 (which Python decodes to lone
    surrogates, text nothing else accepts) written as `\\xff`; any other name unchanged."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _weight_files(directory: str) -> tuple[str, list[str]]:
    """(format, file names) sglang's loader would read: safetensors, else bin, else pt."""
    try:
        names = sorted(e.name for e in os.scandir(directory) if not e.name.startswith("."))
    except OSError as exc:
        raise AdapterFileError(".", f"cannot list the directory: {_os_reason(exc)}") from None
    for suffix, fmt in ((".safetensors", "safetensors"), (".bin", "pickle"), (".pt", "pickle")):
        found = [n for n in names if n.endswith(suffix)]
        if found:
            if fmt == "safetensors":
                return fmt, found
            # The first pattern that matched decides, even if filtering then empties it
            # (a lone training_args.bin means "no weights" to sglang, not "try *.pt").
            kept = [n for n in found if not n.endswith(_NOT_WEIGHTS)]
            return (fmt if kept else "none"), kept
    return "none", []


def read_adapter_dir(
    directory: str | os.PathLike[str],
    *,
    name: str | None = None,
    path: str | None = None,
    pinned: bool = False,
    _root_real: str | None = None,
    _is_dir: bool = False,
) -> PeftManifest:
    """The manifest of a PEFT adapter directory (see the module doc). Never raises for the
    directory's content; raises `InputError` only if `directory` is not a directory."""
    directory = os.fspath(directory)
    display = as_text(path if path is not None else directory)
    adapter_name = as_text(name if name is not None else (os.path.basename(os.path.normpath(directory)) or directory))
    if not _is_dir and not os.path.isdir(directory):  # (`_is_dir`: the caller has just found it one)
        raise InputError(directory, "(adapter)", "not a directory")
    root_real = _root_real if _root_real is not None else os.path.realpath(directory)
    source: dict[str, Any] = {"directory": directory, "weights_format": "none", "weights_files": []}
    config: dict[str, Any] = {}
    added: dict[str, int] | None = None
    table = _EMPTY_TABLE
    try:
        config_path = os.path.join(directory, CONFIG_NAME)
        if not os.path.lexists(config_path):
            raise AdapterFileError(CONFIG_NAME, "missing (sglang's LoRAConfig opens it unconditionally)")
        doc = read_json_file(config_path, root_real, CONFIG_NAME)
        if not isinstance(doc, dict):
            raise AdapterFileError(CONFIG_NAME, f"is a JSON {type(doc).__name__}, expected an object")
        config = doc
        added, source["added_tokens_error"] = _added_tokens(directory, root_real)
        fmt, files = _weight_files(directory)
        source["weights_format"], source["weights_files"] = fmt, files
        if fmt == "safetensors":
            headers = []
            total = 0
            for file in files:
                # The tensor cap holds for the adapter, not per file: 13 shards of 99,000 tensors
                # each would otherwise be read whole (1.3 GB, minutes).
                headers.append(_header(os.path.join(directory, file), root_real))
                total += len(headers[-1].tensors)
                if total > MAX_TENSORS:
                    raise AdapterFileError(
                        file, f"more than {MAX_TENSORS:,} tensors in the adapter's weights files ({len(headers)} of {len(files)} read): not checked"
                    )
            if len(headers) == 1:
                if headers[0].table is None:
                    headers[0].table = _table([headers[0].tensors])
                table = headers[0].table
            else:
                table = _table([h.tensors for h in headers])
    except AdapterFileError as exc:
        source["unreadable"] = exc.reason
        source["unreadable_file"] = exc.file
        config, added, table = {}, None, _EMPTY_TABLE
    return PeftManifest.model_construct(
        name=adapter_name,
        path=display,
        adapter_config=config,
        tensors=table,
        added_tokens=added,
        pinned=pinned,
        source=AdapterSource.model_construct(**_source_defaults(source)),
    )


# Interned by content: alike adapters (same names, shapes, dtypes) share one TensorTable and
# one TensorSpec per distinct (shape, dtype), so the facts derived from a table are computed
# once per fleet (facts/in_pool.py). Tables and specs are never mutated. A table is held
# weakly: it lives while a cached header (its `table`, counted in the header's cost) or a
# manifest in use holds it, so the byte budget above bounds the tables too. Specs are held
# strongly (their ids key the tables) but only for shapes of up to 8 axes, 65,536 at most.
class _WeakValues:
    """Values by key, each held weakly: an entry leaves with its value (as
    weakref.WeakValueDictionary, for the get/set/len/clear used here)."""

    __slots__ = ("_refs",)

    def __init__(self) -> None:
        self._refs: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        found = self._refs.get(key)
        return None if found is None else found()

    def __setitem__(self, key: Any, value: Any) -> None:
        refs = self._refs

        def gone(_: Any, key: Any = key, remove: Any = _remove_dead_weakref) -> None:
            remove(refs, key)  # (only while the entry is still that dead reference; bound here: at exit the module's globals may be gone)

        refs[key] = _weak_ref(value, gone)

    def __len__(self) -> int:
        return len(self._refs)

    def clear(self) -> None:
        self._refs.clear()


_TABLES = _WeakValues()
_SPECS: dict[tuple, TensorSpec] = {}
_SPEC_MAX_AXES = 8
_EMPTY_TABLE = TensorTable.model_construct(root={})


def _spec(shape: tuple[int, ...], dtype: str) -> TensorSpec:
    key = (tuple(shape), dtype)
    spec = _SPECS.get(key)
    if spec is None:
        spec = TensorSpec.model_construct(shape=list(shape), dtype=DTYPES[dtype][1])
        if len(shape) <= _SPEC_MAX_AXES:
            if len(_SPECS) >= 65536:
                _SPECS.clear()
            _SPECS[key] = spec
    return spec


def _table(headers: list[dict[str, tuple[tuple[int, ...], str]]]) -> TensorTable:
    """One TensorTable for the weights files' headers (a later file's name wins, as in sglang)."""
    if len(headers) == 1:
        merged = headers[0]
    else:
        merged = {}
        for header in headers:
            merged.update(header)
    specs = _SPECS
    root = {}
    for name, (shape, dtype) in merged.items():
        spec = specs.get((shape, dtype))
        root[name] = spec if spec is not None else _spec(shape, dtype)
    # Specs are interned by (shape, dtype), so their identities stand for the content; a spec
    # named in a stored key stays alive (its table holds it), so an id is never reused there.
    key = (tuple(root), tuple(map(id, root.values())))
    table = _TABLES.get(key)
    if table is None:
        table = TensorTable.model_construct(root=root)
        _TABLES[key] = table
    return table


def _source_defaults(source: dict[str, Any]) -> dict[str, Any]:
    out = {"added_tokens_error": None, "unreadable": None, "unreadable_file": None}
    out.update(source)
    return out


def _added_tokens(directory: str, root_real: str) -> tuple[dict[str, int] | None, str | None]:
    """added_tokens.json: (tokens, None), or (None, the warning sglang logs for a JSON error).

    sglang catches only json.JSONDecodeError (a warning, the file is then ignored); anything
    else (not UTF-8, not an object, non-integer ids) fails the adapter load."""
    file = os.path.join(directory, ADDED_TOKENS_NAME)
    if not os.path.lexists(file):
        return None, None
    real = _resolve_inside(file, root_real, ADDED_TOKENS_NAME)
    info = _regular_file(real, ADDED_TOKENS_NAME)
    if info.st_size > MAX_JSON_BYTES:
        raise AdapterFileError(ADDED_TOKENS_NAME, f"{info.st_size} bytes is more than the {MAX_JSON_BYTES}-byte limit")
    raw = _read_bytes(real, ADDED_TOKENS_NAME, 0, info.st_size)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AdapterFileError(ADDED_TOKENS_NAME, f"not UTF-8 text (byte {exc.start})") from None
    try:  # measured before json recurses or converts (sglang's json.load would raise there)
        scan = scan_json(raw)
    except LimitExceeded as exc:
        raise AdapterFileError(ADDED_TOKENS_NAME, f"{exc.path}: {exc.reason}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        # lora_config.py:106-108 logs f"Failed to parse added_tokens.json: {e}" and goes on.
        return None, str(exc)
    except (RecursionError, ValueError) as exc:  # not reached after scan_json
        raise AdapterFileError(ADDED_TOKENS_NAME, f"invalid JSON: {exc}") from None
    _no_lone_surrogates(doc, scan, ADDED_TOKENS_NAME)
    if not isinstance(doc, dict):
        raise AdapterFileError(ADDED_TOKENS_NAME, f"is a JSON {type(doc).__name__}, expected an object of token -> id")
    bad = [k for k, v in doc.items() if type(v) is not int]
    if bad:
        raise AdapterFileError(ADDED_TOKENS_NAME, f"token {bad[0]!r} has a non-integer id")
    return doc, None


def list_adapter_dirs(folder: str | os.PathLike[str]) -> list[str]:
    """The adapters of a fleet folder: its subdirectories (hidden ones skipped), sorted.

    Raises `InputError` (exit 2) when `folder` is missing, not a directory or unlistable.
    Entries that are symlinks are kept; the reader refuses them if they leave the folder."""
    folder = os.fspath(folder)
    if not os.path.exists(folder):
        raise InputError(folder, "(adapter-dir)", "no such directory")
    if not os.path.isdir(folder):
        raise InputError(folder, "(adapter-dir)", "not a directory")
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(folder, "(adapter-dir)", f"cannot list: {_os_reason(exc)}") from None
    out = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False) or (entry.is_symlink() and _link_is_dir(entry.path))
        except OSError:
            is_dir = entry.is_symlink()
        if is_dir:
            out.append(entry.path)
    return out


def _link_is_dir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except OSError:
        return False


def read_fleet(
    dirs: Iterable[str | os.PathLike[str]],
    *,
    folder: str | os.PathLike[str] | None = None,
    lora_paths: "list[LoraRef] | LoraPathIndex | None" = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[PeftManifest]:
    """Manifests of many adapter directories; never raises for an adapter's content.

    With `folder`, an entry whose real path leaves the folder (a symlinked directory pointing
    elsewhere, or a loop) is refused as unreadable. `lora_paths` (sglang's parsed --lora-paths)
    names an adapter by its --lora-paths entry when the paths resolve to the same directory."""
    dirs = [os.fspath(d) for d in dirs]
    folder_real = os.path.realpath(os.fspath(folder)) if folder is not None else None
    by_dir = lora_paths if isinstance(lora_paths, LoraPathIndex) else LoraPathIndex(lora_paths)
    out = []
    for index, directory in enumerate(dirs):
        name, path, pinned = None, None, False
        entry = by_dir.get(directory)
        if entry is not None:
            name, path, pinned = entry.name, entry.path, entry.pinned
        out.append(_read_entry(directory, folder_real, name, path, pinned, None if folder_real is not None else _dir_real(directory, by_dir.folders)))
        if progress is not None:
            progress(index + 1, len(dirs))
    return out


def read_cached_adapter(directory: str, repo_folder: str, entry: LoraRef) -> PeftManifest:
    """The adapter of a snapshot in the Hugging Face cache (inputs/hf_cache.py), named and
    shown as its --lora-paths entry: its files are links into the repository folder's blobs/
    (the cache's layout), so links may point anywhere inside that folder, never out of it."""
    return _read_entry(directory, None, entry.name, entry.path, entry.pinned, _LinkRoot(os.path.realpath(directory), os.path.realpath(repo_folder)))


def _read_entry(directory: str, folder_real: str | None, name: str | None, path: str | None, pinned: bool, root_real: str | None = None) -> PeftManifest:
    label = os.path.basename(os.path.normpath(directory)) or directory
    reason = None
    real = root_real
    if folder_real is not None:
        try:
            real = _resolve_inside(directory, folder_real, label)
        except AdapterFileError as exc:
            reason = exc.reason.replace("adapter directory", "adapter folder")
    if reason is None and not os.path.isdir(directory):
        reason = "not a directory"
    if reason is not None:
        return _unreadable(directory, name or label, path, pinned, reason, ".")
    try:
        return read_adapter_dir(directory, name=name, path=path, pinned=pinned, _root_real=real, _is_dir=True)
    except (InputError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a defect of this reader: still only this adapter's problem
        text = " ".join(str(exc).split())[:300]
        return _unreadable(directory, name or label, path, pinned, f"reading it failed inside inkling-compat (a defect: please report it): {type(exc).__name__}: {text}", "(read)")


def _unreadable(directory: str, name: str, path: str | None, pinned: bool, reason: str, file: str) -> PeftManifest:
    return PeftManifest.model_construct(
        name=as_text(name),
        path=as_text(path if path is not None else directory),
        adapter_config={},
        tensors=_EMPTY_TABLE,
        added_tokens=None,
        pinned=pinned,
        source=AdapterSource.model_construct(
            **_source_defaults({"directory": directory, "weights_format": "none", "weights_files": [], "unreadable": reason, "unreadable_file": file})
        ),
    )


def _dir_real(directory: str, folders: dict[str, str]) -> str | None:
    """`os.path.realpath(directory)` for a directory that is no symlink: the real path of the
    folder it sits in (found once in `folders`) and its name, for one lstat instead of one per
    component of the path. None (the caller resolves it) for anything else."""
    head, name = os.path.split(directory)
    if name in ("", ".", ".."):
        return None
    try:
        if stat.S_ISLNK(os.lstat(directory).st_mode):
            return None
    except (OSError, ValueError):
        return None
    folder = folders.get(head)
    if folder is None:
        folder = folders[head] = os.path.realpath(head or os.curdir)
    return os.path.join(folder, name)
