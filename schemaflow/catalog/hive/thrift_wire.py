"""Thrift's binary protocol over a plain socket: calls to a metastore, without a JVM or generated code.

A call is a message header (version, method name, sequence id), then the arguments as a struct;
the answer is the same header, then a result struct whose field 0 is the value and whose other
fields are the exceptions the method declares. Every value on the wire carries its type, so an
answer decodes without the service's definition; only the names of struct fields are not on the
wire, and a ``Shape`` gives them: ``{field id: name}``, or ``{field id: (name, shape)}`` for a
field holding structs (or lists of them). Fields a shape does not name are skipped, so structs
decode as the metastore's simple JSON names them, keeping only what the caller asks for.

A server that does not speak plain binary Thrift (one that wants SASL, framed transport or TLS)
answers with something else (``NotPlainThrift``) or hangs up (``OSError``, as when the connection
breaks); a server that raises an exception is ``ThriftError``.

An answer is bounded whatever the server sends: at most ``MAX_ANSWER_BYTES`` in all, no string or
list longer than what is left of that (each element takes a byte at least, so a count cannot make
this process loop or allocate past it), values nested at most ``MAX_NESTING`` deep, and the whole
answer within the connection's ``timeout`` (a server that sends a byte now and then cannot hold a
call open for longer). Each is ``AnswerTooLarge`` or ``AnswerTimeout``, not worth asking again.
"""
from __future__ import annotations

import socket
import struct
import time
from typing import Any
from collections.abc import Mapping, Sequence

VERSION_1 = 0x80010000
CALL, REPLY, EXCEPTION = 1, 2, 3
STOP, BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = 0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
_FIXED = {BOOL: ">?", BYTE: ">b", DOUBLE: ">d", I16: ">h", I32: ">i", I64: ">q"}
_SIZES = {kind: struct.calcsize(code) for kind, code in _FIXED.items()}
UNKNOWN_METHOD = 1  # TApplicationException's type for a method the server does not have
CHUNK = 1 << 16
# The largest answer read: a batch of 100 tables of thousands of columns each, or the names of
# millions of partitions, are tens of MB.
MAX_ANSWER_BYTES = 512 * 1024 * 1024
# A Table struct nests five levels (table, storage, SerDe, parameters); far above, far below recursion's limit.
MAX_NESTING = 64

Shape = Mapping[int, str | tuple[str, "Shape"]]
# An argument: field id, Thrift type, value (a list is a list of strings; a struct, a sequence of arguments).
Argument = tuple[int, int, Any]


class ThriftError(Exception):
    """The metastore refused the call: the message of the exception it raised."""


class NotPlainThrift(ThriftError):
    """The server does not speak plain binary Thrift (it wants SASL, framing or TLS), or lacks the method."""


class AnswerTooLarge(ThriftError):
    """The answer holds more, or nests deeper, than any metastore answer schemaflow reads."""


class AnswerTimeout(ThriftError):
    """The server did not complete its answer within the connection's timeout."""


class Connection:
    """One socket to a Thrift server, with calls made one after another on it."""

    def __init__(self, address: tuple[str, int], connect_timeout: float, timeout: float) -> None:
        self.sock = socket.create_connection(address, timeout=connect_timeout)
        self.timeout = timeout  # for a whole answer
        self.sequence = 0
        self._data = b""
        self._pos = 0
        self._received = 0      # bytes of the current answer so far
        self._deadline = 0.0    # when the current answer must be complete
        self._depth = 0

    def close(self) -> None:
        self.sock.close()

    def call(self, method: str, arguments: Sequence[Argument], answer: Shape | None = None) -> Any:
        """Call ``method``; its value, structs in it named by ``answer``. Raises ``ThriftError`` if the
        server raised, ``NotPlainThrift`` if it does not answer in Thrift, ``OSError`` if the socket broke."""
        self.sequence += 1
        message = [struct.pack(">I", VERSION_1 | CALL), _string(method), struct.pack(">i", self.sequence),
                   _fields(arguments)]
        self._deadline = time.monotonic() + self.timeout
        self.sock.settimeout(self.timeout)
        self.sock.sendall(b"".join(message))
        self._data, self._pos, self._received, self._depth = b"", 0, 0, 0
        header = self._unpack(">I", 4)
        if header & 0xFFFF0000 != VERSION_1:
            raise NotPlainThrift("not a Thrift binary-protocol answer (a SASL, framed or TLS metastore?)")
        self._string()  # the method name
        self._unpack(">i", 4)  # the sequence id
        if header & 0xFF == EXCEPTION:
            failure = self._struct({1: "message", 2: "type"})
            text = failure.get("message") or f"the metastore could not run {method}"
            raise (NotPlainThrift if failure.get("type") == UNKNOWN_METHOD else ThriftError)(text)
        value = None
        while (kind := self._byte()) != STOP:
            field = self._unpack(">h", 2)
            if field == 0:
                value = self._decode(kind, answer)
            elif kind == STRUCT:
                exception = self._struct({1: "message"})
                raise ThriftError(exception.get("message") or f"{method} raised an exception")
            else:
                self._skip(kind)
        return value

    # --- reading -----------------------------------------------------------------------------

    def _need(self, size: int) -> None:
        """Make sure ``size`` bytes are buffered from the current position."""
        if self._pos + size <= len(self._data):
            return
        self._within(size - (len(self._data) - self._pos))
        parts = [self._data[self._pos:]]
        have = len(parts[0])
        while have < size:
            left = self._deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError()
                self.sock.settimeout(left)
                chunk = self.sock.recv(min(max(CHUNK, size - have), 1 << 20))
            except TimeoutError:
                raise AnswerTimeout(f"the metastore did not complete its answer within {self.timeout:g} s") from None
            if not chunk:
                raise ConnectionError("the metastore closed the connection")
            parts.append(chunk)
            have += len(chunk)
            self._received += len(chunk)
        self._data, self._pos = b"".join(parts), 0

    def _within(self, more: int) -> None:
        """Refuse an answer that says it holds more than ``MAX_ANSWER_BYTES`` (a size or a count past it)."""
        if more < 0 or self._received + more > MAX_ANSWER_BYTES:
            raise AnswerTooLarge(f"the metastore's answer says it holds more than {MAX_ANSWER_BYTES:,} bytes "
                                 "(or a negative size): not an answer schemaflow reads")

    def _unpack(self, code: str, size: int) -> Any:
        self._need(size)
        value = struct.unpack_from(code, self._data, self._pos)[0]
        self._pos += size
        return value

    def _byte(self) -> int:
        self._need(1)
        self._pos += 1
        return self._data[self._pos - 1]

    def _string(self) -> str:
        size = self._unpack(">i", 4)
        self._within(size)
        self._need(size)
        start, self._pos = self._pos, self._pos + size
        # As Java's Thrift decodes it: a malformed byte becomes U+FFFD.
        return self._data[start:self._pos].decode("utf-8", "replace")

    def _decode(self, kind: int, shape: Shape | None) -> Any:
        if kind == STRING:
            return self._string()
        if kind in _FIXED:
            return self._unpack(_FIXED[kind], _SIZES[kind])
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise AnswerTooLarge(f"the metastore's answer nests values more than {MAX_NESTING} deep: not an answer "
                                 "schemaflow reads")
        try:
            if kind == STRUCT:
                return self._struct(shape or {})
            if kind in (LIST, SET):
                inner, size = self._byte(), self._unpack(">i", 4)
                self._within(size)  # each element takes a byte at least
                return [self._decode(inner, shape) for _ in range(size)]
            if kind == MAP:
                key, value, size = self._byte(), self._byte(), self._unpack(">i", 4)
                self._within(size)
                return {self._decode(key, None): self._decode(value, shape) for _ in range(size)}
        finally:
            self._depth -= 1
        raise NotPlainThrift(f"unknown Thrift type {kind}")

    def _struct(self, shape: Shape) -> dict[str, Any]:
        data: dict[str, Any] = {}
        while (kind := self._byte()) != STOP:
            named = shape.get(self._unpack(">h", 2))
            if named is None:
                self._skip(kind)
            elif isinstance(named, str):
                data[named] = self._decode(kind, None)
            else:
                data[named[0]] = self._decode(kind, named[1])
        return data

    def _skip(self, kind: int) -> None:
        self._decode(kind, None)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def _fields(arguments: Sequence[Argument]) -> bytes:
    """A struct's fields and its end: the call's arguments, or a struct among them."""
    return b"".join(struct.pack(">bh", kind, field) + _value(kind, value) for field, kind, value in arguments) + bytes([STOP])


def _value(kind: int, value: Any) -> bytes:
    if kind == STRING:
        return _string(value)
    if kind == LIST:
        return struct.pack(">bi", STRING, len(value)) + b"".join(_string(v) for v in value)
    if kind == STRUCT:
        return _fields(value)
    if kind in _FIXED:
        return struct.pack(_FIXED[kind], value)
    raise ValueError(f"no encoding here for Thrift type {kind}")
