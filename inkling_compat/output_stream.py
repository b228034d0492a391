"""Writing what the command prints, so that no output stream can fail the run.

Any encoding works: what the stream cannot encode is escaped as the format reads it (`\\u00e9`
in JSON and SARIF, `&#233;` in JUnit XML, `\\xe9` in text and GitHub annotations). A full disk, a
closed stream or a reader gone away (`| head`) is an `OutputError`: exit 2 with one line on
stderr while stderr can still take one; a line that cannot be written is dropped, never a
traceback. `--output FILE` is written by inkling_compat/write_file.py (the one writer of every
file the tool writes); an `--output` that is one of the inputs, or a file the check reads
because an input names it, is refused before anything is written.
"""

from __future__ import annotations

import codecs
import errno
import os
import sys

from inkling_compat.errors import InputError

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

# The errors of a write that are the stream's, not the tool's.
STREAM_ERRNOS = {errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


class OutputError(InputError):
    """The report could not be written (exit 2)."""


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    """`\\uXXXX` (a surrogate pair past U+FFFF): what JSON reads back as the same character;
    non-ASCII characters only ever stand inside JSON strings."""
    assert isinstance(exc, UnicodeEncodeError)
    out = []
    for ch in exc.object[exc.start : exc.end]:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error("inkling_compat.json", _json_escape)
# What a non-UTF-8 stdout gets for a character it cannot encode, by the document's syntax
# (report/formats.py): JSON's own escape, XML's character reference, else a backslash escape.
_ERRORS = {"json": "inkling_compat.json", "xml": "xmlcharrefreplace"}


def _syntax(fmt: str) -> str:
    from inkling_compat.report.formats import BY_NAME

    entry = BY_NAME.get(fmt)
    return entry.syntax if entry is not None else "text"
# The secret values of this command's inputs (inputs/secrets.py): masked in everything written.
_hidden: set[str] = set()


class _Closed:
    """Standard output when its descriptor was closed before the start: every write fails,
    as a write to a closed descriptor does (print() to None would drop the report silently)."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def prepare() -> None:
    """At the start of the command: escape what stdout and stderr cannot encode (print() and
    every other write), and make a closed stdout fail loudly. The secrets of an earlier
    command run in this process are forgotten (each masks its own inputs')."""
    _hidden.clear()
    if sys.stdout is None:
        sys.stdout = _Closed()  # type: ignore[assignment]
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def stream_error(exc: BaseException) -> bool:
    """Whether `exc` is a failed write to an output stream (not a defect)."""
    return isinstance(exc, OSError) and (isinstance(exc, BrokenPipeError) or exc.errno in STREAM_ERRNOS)


def _stream_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def write_stdout(text: str, fmt: str = "text") -> None:
    """`text` and a newline on stdout, flushed; what its encoding lacks escaped for `fmt`."""
    text = masked(text)
    stream = sys.stdout
    try:
        if stream is None:
            raise OSError(errno.EBADF, "Bad file descriptor")
        encoding = getattr(stream, "encoding", None) or "utf-8"
        errors = _ERRORS.get(_syntax(fmt), "backslashreplace")
        if _syntax(fmt) in _ERRORS and codecs.lookup(encoding).name != "utf-8":
            # JSON and XML documents declare (or imply) UTF-8: in any other encoding they are
            # written as ASCII, the rest escaped, which reads the same in every encoding.
            encoding = "ascii"
        data = text + "\n"
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            stream.flush()
            buffer.write(data.encode(encoding, errors=errors))
            buffer.flush()
        else:
            stream.write(data.encode(encoding, errors=errors).decode(encoding))
            stream.flush()
    except OSError as exc:
        if not stream_error(exc):
            raise
        _stdout_failed.append(True)
        raise OutputError("(standard output)", "(output)", f"cannot write the report: {_stream_reason(exc)}") from None
    except ValueError:  # "I/O operation on closed file"
        _stdout_failed.append(True)
        raise OutputError("(standard output)", "(output)", "cannot write the report: the stream is closed") from None


_stdout_failed: list[bool] = []  # a write to stdout failed and was reported: said once

def hide(values: Iterable[str]) -> None:
    """Never write these values (an input's secrets) on any stream or into --output."""
    _hidden.update(v for v in values if v)


def masked(text: str) -> str:
    """`text` without any secret of the inputs (those `hide` was given, those in what was read
    from standard input) nor anything shaped like an access token."""
    from inkling_compat.inputs import secrets, stdin

    found = set(_hidden)
    raw = stdin.already_read()
    if raw:
        found |= secrets.in_text(raw.decode("utf-8", "replace"))
    return secrets.mask(text, found)


def say(line: str) -> bool:
    """One line on stderr; False (and nothing raised) when stderr cannot take it."""
    line = masked(line)
    try:
        stream = sys.stderr
        if stream is None:
            return False
        stream.write(line + "\n")
        stream.flush()
        return True
    except (OSError, ValueError):
        if sys.stderr is sys.__stderr__:
            silence(2)  # the interpreter's own flush at exit would fail on it again
        return False


def refuse_inputs_as_output(output: str | None, inputs: Iterable[str | None], folders: Iterable[str | None] = ()) -> None:
    """Exit 2 when --output names one of the input files, or a file inside an input folder
    (a model or adapter folder, a fleet folder): the report would replace what it checks."""
    if output is None:
        return
    target = os.path.realpath(output)
    for item in inputs:
        if item is None:
            continue
        try:
            same = os.path.realpath(item) == target or (os.path.exists(output) and os.path.samefile(item, output))
        except (OSError, ValueError):
            same = False
        if same:
            raise InputError(output, "--output", f"is the input {item}: the report would overwrite it")
    named = {target, os.path.abspath(output)}  # (a file reached through a linked folder, too)
    for folder in folders:
        if folder is None or not os.path.isdir(folder):
            continue
        roots = {os.path.realpath(folder), os.path.abspath(folder)}
        inside = any(os.path.commonpath([root, name]) == root for root in roots for name in named)
        if inside or target in _linked_from(folder):
            raise InputError(output, "--output", f"is inside the input folder {folder}: the report would change what it checks")


def _linked_from(folder: str, limit: int = 10_000) -> set[str]:
    """Where the symlinks directly in `folder` lead (a model folder's config.json may be a link
    to a file elsewhere: writing there changes what the check reads)."""
    out: set[str] = set()
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= limit:
                    break
                if entry.is_symlink():
                    out.add(os.path.realpath(entry.path))
    except OSError:
        pass
    return out


def read_through(config: Any) -> tuple[list[str], list[str]]:
    """(files, folders) the check reads because the server config names them: a launch
    command's `--config` file, the `--model-path` folder, the `--lora-paths` folders. A config
    that does not load names none (the check refuses it on its own)."""
    from inkling_compat.errors import InputError as _Unusable

    files = [f for f in [getattr(config, "config_file", None)] if isinstance(f, str)]
    try:
        from inkling_compat.facts.inputs import lora_path_entries
        from inkling_compat.inputs.loading import load_server_config
        from inkling_compat.inputs.read_by_sglang import model_path

        server, _ = load_server_config(config)
        folders = [model_path(server), *(entry.path for entry in lora_path_entries(server))]
    except (_Unusable, OSError, ValueError, TypeError):
        return files, []
    return files, [f for f in folders if isinstance(f, str)]


def write_file(path: str, text: str) -> None:
    """`text` (and a newline) in the file `path` names (inkling_compat/write_file.py: through a
    symlink, in place for a hard link, owner and mode kept, never a device or a FIFO)."""
    from inkling_compat.write_file import WriteRefused, write_text

    try:
        write_text(path, text + "\n" if text else "", "--output")
    except WriteRefused as exc:
        raise OutputError(exc.file, exc.field, exc.reason) from None


def emit(text: str, output: str | None, fmt: str = "text") -> None:
    """The document on stdout, or in --output FILE."""
    if output is None:
        if text:
            write_stdout(text, fmt)
        return
    write_file(output, masked(text))


def finish(code: int, own_process: bool) -> int:
    """Flush stdout before the interpreter does (its failure there would be a traceback and
    exit 120): a failed flush is exit 2 with one line. In the command's own process, a stream
    that failed is then pointed at /dev/null so that the exit flush finds nothing to fail on."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        if _stdout_failed:
            _stdout_failed.clear()
            if own_process:
                silence(1)
            return 2
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and not stream_error(exc):
            raise
        if not _stdout_failed:
            say(f"inkling-compat: error: cannot write to standard output: {_stream_reason(exc) if isinstance(exc, OSError) else 'closed'}")
        _stdout_failed.clear()
        if own_process:
            silence(1)
        return 2
    return code


def silence(fd: int) -> None:
    """Point descriptor `fd` at /dev/null (what is still buffered for it is dropped)."""
    try:
        stream: Any = sys.__stdout__ if fd == 1 else sys.__stderr__
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:  # drop what is pending: it would fail again at exit, or go to null
            try:
                buffer.flush()
            except (OSError, ValueError):
                pass
    except (OSError, ValueError, AttributeError):
        pass
