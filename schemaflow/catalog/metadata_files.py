"""Reading a file that a catalog entry names, as hostile input: the checks every reader of a table kind's own
metadata (an Iceberg metadata file, a Delta log) makes before and while it reads.

Whoever can register a table writes where its metadata is, so the file may be any file this process can read.
A local location is an absolute path (a relative one names no file of the table's: a metastore's locations are
absolute), of a regular file: its type is checked on a handle that opens nothing, and the file opened through that
handle without waiting, so a device is never opened (its open alone can act), a pipe never waited on, and a path
swapped between check and open gains nothing. At most a bound of bytes is read, and what is left of the command's
budget (``catalog.metadata_bounds``). Another scheme is read only from object storage or HDFS, and only on the
storage its database is on (the same ``scheme://authority``), so that no request, signed with the job's keys, goes
to a place nobody configured. Every failure is ``Unreadable``: one line naming the location and the kind of
failure, quoting nothing of the file.
"""
from __future__ import annotations

import json
import os
import re
import stat
from functools import cache
from typing import Any
from collections.abc import Sequence
from urllib.parse import urlsplit

from schemaflow.catalog.metadata_bounds import Allowance
from schemaflow.catalog.metadata_readers import Unreadable

# The schemes of object storage and HDFS that metadata is read from (``pyiceberg.io.SCHEMA_TO_FILE_IO``, less its
# local files, which are read here, and Hugging Face's hub, which holds no database).
REMOTE_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "oss", "hdfs", "viewfs", "abfs", "abfss", "wasb", "wasbs"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_CHUNK = 1 << 20
# The messages of Python's JSON parser, none of which quotes what it parsed (the position is added).
_JSON_MESSAGES = frozenset({
    "Expecting value", "Expecting ',' delimiter", "Expecting ':' delimiter", "Extra data",
    "Expecting property name enclosed in double quotes", "Invalid control character at",
    "Unterminated string starting at", "Invalid \\escape", "Invalid \\uXXXX escape",
    "Illegal trailing comma before end of object", "Illegal trailing comma before end of array"})


def check_location(location: str, storage: Sequence[str | None], where: str = "the metadata location",
                   noun: str = "the metadata file") -> str | None:
    """Refuse (``Unreadable``) a location schemaflow does not read metadata from, or write it to: the local path it
    names, or None for one on object storage or HDFS, on the storage of ``storage`` (its database's). ``where`` and
    ``noun`` name the location and what it holds in a reason."""
    local = _local_path(location, where)
    if local is not None:
        return local
    scheme = urlsplit(location).scheme.lower()
    if scheme not in REMOTE_SCHEMES:
        raise Unreadable(f"{where} {location!r} is not a local path nor on object storage or HDFS "
                         f"({', '.join(sorted(REMOTE_SCHEMES))}): schemaflow does not read it")
    if not urlsplit(location).netloc:
        raise Unreadable(f"{where} {location!r} names no bucket or host: schemaflow does not read it")
    allowed = {authority(root) for root in storage if root}
    if authority(location) not in allowed:
        raise Unreadable(f"{noun} {location!r} is not on the storage its database is on "
                         f"({', '.join(sorted(allowed)) or 'none known'}): schemaflow does not read it")
    return None


def _local_path(location: str, where: str) -> str | None:
    """The absolute path a local location names (``/x``, ``file:/x``, ``file:///x``, ``file://localhost/x``), or None
    for another scheme. Raises ``Unreadable`` for a relative path, or one on another host."""
    scheme = _SCHEME.match(location)
    if scheme is not None and scheme.group(1).lower() != "file":
        return None
    path = location[scheme.end():] if scheme is not None else location
    if path.startswith("//"):
        host, slash, rest = path[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            raise Unreadable(f"{where} {location!r} names the host {host!r}: a local file is file:/path")
        path = slash + rest
    if not path.startswith("/"):
        raise Unreadable(f"{where} {location!r} is a relative path, and a metastore's locations are "
                         "absolute (/path, file:/path)")
    if "\0" in path:
        raise Unreadable(f"{where} {location!r} holds a NUL character, which no path holds")
    return path


def local_bytes(path: str, location: str, allowance: Allowance | None, max_bytes: int, advice: str,
                noun: str = "the metadata file", where: str = "the metadata location", follow: bool = True) -> bytes:
    """A regular file's bytes, at most ``max_bytes`` and what is left of ``allowance``; a device, a pipe or a
    folder is not opened, nor a symbolic link unless ``follow``. ``noun`` names the file and ``where`` its location
    in a reason; ``advice``: what to do about a file that is there but cannot be opened or read."""
    try:
        handle = open_regular(path, follow)
    except NotRegular:
        raise Unreadable(f"{where} {location!r} is not a regular file") from None
    except OSError as error:
        raise Unreadable(f"{noun} {location!r} cannot be opened ({why(error)})", advice) from None
    try:
        size = os.fstat(handle).st_size
        if size > max_bytes:
            raise Unreadable(f"{noun} {location!r} has {size:,} bytes, more than the {max_bytes:,} schemaflow reads")
        most = limit(allowance, max_bytes)
        if size > most and allowance is not None:
            allowance.refuse()
        content = bytearray()
        try:
            while len(content) <= most and (chunk := os.read(handle, min(_CHUNK, most + 1 - len(content)))):
                content += chunk
                if allowance is not None:
                    allowance.took(len(chunk))
        except OSError as error:
            raise Unreadable(f"{noun} {location!r} cannot be read ({why(error)})", advice) from None
        return bounded(bytes(content), location, most, allowance, max_bytes, noun)
    finally:
        os.close(handle)


class NotRegular(Exception):
    """The path is not a regular file (a device, a pipe, a folder, a socket)."""


def open_regular(path: str, follow: bool = True) -> int:
    """``path`` opened for reading if it is a regular file (not a symbolic link to one unless ``follow``), else
    ``NotRegular``; ``OSError`` as ``open`` raises it.

    Its type is read from a handle that opens nothing (``O_PATH``: no device's open runs, no pipe is waited on),
    and the file is then opened through that handle (``/proc/self/fd``), the same file whatever the path names
    by then. Where there is no ``O_PATH`` (not Linux), the type is read first and the file opened without waiting
    (``O_NONBLOCK``), then checked again on the handle opened."""
    unfollowed = 0 if follow else getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not _reopens():
        if not stat.S_ISREG(os.stat(path, follow_symlinks=follow).st_mode):
            raise NotRegular()
        handle = os.open(path, flags | unfollowed)
    else:
        found = os.open(path, os.O_PATH | os.O_CLOEXEC | unfollowed)  # a link itself, not followed: not regular
        try:
            if not stat.S_ISREG(os.fstat(found).st_mode):
                raise NotRegular()
            handle = os.open(f"/proc/self/fd/{found}", flags)
        finally:
            os.close(found)
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise NotRegular()
    return handle


@cache
def _reopens() -> bool:
    """Whether a file can be opened through an ``O_PATH`` handle here (Linux, with /proc mounted)."""
    return hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd")


def why(error: OSError) -> str:
    """An ``OSError`` in words: its kind, never a path or text it carries."""
    return error.strerror or type(error).__name__


def authority(location: str) -> str:
    """A remote location's ``scheme://authority``, in lower case: the storage it is on."""
    parts = urlsplit(location)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def limit(allowance: Allowance | None, max_bytes: int) -> int:
    """The most bytes a read may take: the bound of one file, or what is left of the command's when less."""
    return max_bytes if allowance is None else min(max_bytes, allowance.left)


def bounded(content: bytes, location: str, most: int, allowance: Allowance | None, max_bytes: int,
            noun: str = "the metadata file") -> bytes:
    """``content``, read with a bound of ``most`` bytes (one more, to tell), if it holds no more than that."""
    if len(content) <= most:
        return content
    if most < max_bytes and allowance is not None:
        allowance.refuse()
    raise Unreadable(f"{noun} {location!r} has more than the {max_bytes:,} bytes schemaflow reads")


def parsed_json(content: bytes, location: str, noun: str = "the metadata file", whose: str = "Iceberg's") -> Any:
    """The JSON value ``content`` holds (no deeper than Python parses); what is wrong with it said without quoting
    it. ``whose``: the format the file is meant to be in, as a reason names it."""
    try:
        return json.loads(content)
    except RecursionError:
        raise Unreadable(f"{noun} {location!r} is nested too deep to be {whose}") from None
    except json.JSONDecodeError as error:
        said = f"{error.msg}: " if error.msg in _JSON_MESSAGES else ""
        raise Unreadable(f"{noun} {location!r} is not JSON ({said}line {error.lineno} column "
                         f"{error.colno} (char {error.pos}))") from None
    except UnicodeDecodeError as error:
        raise Unreadable(f"{noun} {location!r} is not JSON (not text in UTF-8, 16 or 32: byte "
                         f"{error.start:,})") from None
    except ValueError:  # a number of more digits than Python converts
        raise Unreadable(f"{noun} {location!r} is not JSON schemaflow reads (a number too long)") from None


def json_text(value: Any) -> Any:
    """``value`` where the file's format has a string (or nothing); a ``TypeError`` for anything else."""
    if value is not None and not isinstance(value, str):
        raise TypeError("not a string")
    return value


def json_int(value: Any) -> int:
    """``value`` where the file's format has an integer; a ``TypeError`` for anything else (true and false too)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    return value
