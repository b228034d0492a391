"""Every file the tool writes (`check --output FILE`, `check --fix`), written one way.

What the user named is edited, never replaced by something else: a symlink is followed and the
file it points to is written (the link stays a link); a file with other hard links is written
in place (every name keeps seeing the same file); owner, group and mode stay as they were. A
regular file with one link is written to a temporary file beside it and renamed over it, so a
reader sees the old text or the new, never half of it. A device, FIFO, socket or directory is
refused, never written or replaced (`--output /dev/null` run as root would otherwise turn the
system's node into a regular file). With `expected`, a file whose bytes are no longer those
the caller read is not written ("changed while fixing; run again"). Every failure (a name too
long, a read-only file system, a full disk, no permission) is `WriteRefused`: exit 2, one line
naming the file and what could not be done.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

from inkling_compat.errors import InputError

# Read back at most this much to compare with what the caller read (the config cap, and some).
_COMPARE_LIMIT = 64 * 1024 * 1024


class WriteRefused(InputError):
    """A file the tool was asked to write could not be, or must not be, written (exit 2)."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str | None:
    """What a file that is not a regular file is ("a FIFO", ...); None for a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def write_text(path: str, text: str, option: str, expected: bytes | None = None) -> None:
    """`text` (UTF-8, its line endings as they are) into the file `path` names.

    `option` names what asked for the write in a refusal (`--output`, `--fix`); `expected`:
    the file's bytes when the caller read it (None: write whatever is there now)."""
    real = os.path.realpath(path)
    try:
        info: os.stat_result | None = os.stat(real)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise WriteRefused(path, option, f"cannot look at the file: {_reason(exc)}") from None
    if info is not None:
        kind = kind_of(info.st_mode)
        if kind is not None:
            raise WriteRefused(path, option, f"is {kind}, not a regular file: not written")
    if expected is not None:
        _refuse_if_changed(path, real, option, expected, info)
    data = text.encode("utf-8", errors="surrogateescape")
    if info is None:
        _replace(path, real, data, option, None)
    elif info.st_nlink > 1:
        _in_place(path, real, data, option)
    else:
        try:
            _replace(path, real, data, option, info)
        except _UseInPlace:
            _in_place(path, real, data, option)


class _UseInPlace(Exception):
    """A temporary file cannot take the file's place as it is (its folder is not writable, its
    owner cannot be given to the new file): the file is written in place instead."""


def _refuse_if_changed(path: str, real: str, option: str, expected: bytes, info: os.stat_result | None) -> None:
    if info is None:
        raise WriteRefused(path, option, "was removed while fixing; run again")
    try:
        with open(real, "rb") as handle:
            now = handle.read(_COMPARE_LIMIT + 1)
    except OSError as exc:
        raise WriteRefused(path, option, f"cannot read the file again before writing: {_reason(exc)}") from None
    if now != expected:
        raise WriteRefused(path, option, "changed while fixing; run again")


def _replace(path: str, real: str, data: bytes, option: str, info: os.stat_result | None) -> None:
    """A temporary file in the target's folder, given the target's owner and mode, renamed over it."""
    folder = os.path.dirname(real) or "."
    try:
        fd, temporary = tempfile.mkstemp(prefix=".inkling-compat-", suffix=".tmp", dir=folder)
    except OSError as exc:
        if info is not None and exc.errno in (errno.EACCES, errno.EPERM):
            raise _UseInPlace from None
        raise WriteRefused(path, option, f"cannot create a file in {folder}: {_reason(exc)}") from None
    try:
        try:
            if info is None:
                mask = os.umask(0)
                os.umask(mask)
                os.fchmod(fd, 0o666 & ~mask)  # as open(path, "w") would create it
            else:
                if (info.st_uid, info.st_gid) != (os.fstat(fd).st_uid, os.fstat(fd).st_gid):
                    try:
                        os.fchown(fd, info.st_uid, info.st_gid)
                    except PermissionError:
                        raise _UseInPlace from None
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, real)
        temporary = ""
    except OSError as exc:
        raise WriteRefused(path, option, f"cannot write: {_reason(exc)}") from None
    finally:
        if temporary:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _in_place(path: str, real: str, data: bytes, option: str) -> None:
    """The file itself rewritten (hard links, owner and mode untouched). The space is reserved
    first, so a full disk refuses the write before a byte of the file has changed."""
    try:
        fd = os.open(real, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise WriteRefused(path, option, f"cannot open the file for writing: {_reason(exc)}") from None
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:  # swapped for something else since it was looked at
            raise WriteRefused(path, option, f"is {kind}, not a regular file: not written")
        try:
            if data:
                os.posix_fallocate(fd, 0, len(data))
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
                raise
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except OSError as exc:
        raise WriteRefused(path, option, f"cannot write: {_reason(exc)}") from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    offset = 0
    os.lseek(fd, 0, os.SEEK_SET)
    while offset < len(view):
        written = os.write(fd, view[offset:])
        if written <= 0:
            raise OSError(errno.EIO, "short write")
        offset += written
