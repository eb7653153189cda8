"""Partition counts from a Thrift metastore without a JVM: one call in Thrift's binary protocol.

``plan --base`` must stay fast and start no JVM, yet a reviewer wants the cost of each cascade.
Counting a table's partitions is one metastore call, ``get_num_partitions_by_filter(db, table, "")``,
and Thrift's binary protocol over a plain socket is small enough to speak directly: a message header,
a struct of three strings, and an i32 back. A metastore that wants SASL (Kerberos) or cannot be
reached answers nothing here; the counts are then unknown, as without a metastore.
"""
from __future__ import annotations

import socket
import struct
from typing import Callable
from urllib.parse import urlparse

CALL, REPLY, EXCEPTION = 1, 2, 3
VERSION_1 = 0x80010000
STOP, I32, STRING, STRUCT = 0, 8, 11, 12
METHOD = "get_num_partitions_by_filter"


class ThriftError(Exception):
    """The metastore could not be asked, or refused the question."""


def partition_counter(uri: str, timeout: float = 5.0) -> Callable[[str], int | None]:
    """A function from ``db.table`` to its partition count, or None when the metastore does not answer.

    ``uri`` is the metastore setting (``thrift://host:port``, several separated by commas: the first is used).
    """
    parsed = urlparse(uri.split(",")[0].strip())
    if parsed.scheme != "thrift" or not parsed.hostname:
        raise ThriftError(f"{uri!r} is not a thrift://host:port metastore address")
    address = (parsed.hostname, parsed.port or 9083)
    connection: list[socket.socket] = []

    def count(key: str) -> int | None:
        database, _, table = key.partition(".")
        try:
            if not connection:
                connection.append(socket.create_connection(address, timeout=timeout))
            return _call(connection[0], database, table)
        except (OSError, ThriftError):
            for sock in connection:
                sock.close()
            connection.clear()
            return None

    return count


def _call(sock: socket.socket, database: str, table: str) -> int:
    args = _string_field(1, database) + _string_field(2, table) + _string_field(3, "") + bytes([STOP])
    sock.sendall(struct.pack(">I", VERSION_1 | CALL) + _string(METHOD) + struct.pack(">i", 0) + args)
    reader = _Reader(sock)
    header = reader.i32() & 0xFFFFFFFF
    if header & 0xFFFF0000 != VERSION_1:
        raise ThriftError("not a Thrift binary-protocol answer (a SASL or framed metastore?)")
    reader.string()  # the method name
    reader.i32()     # the sequence id
    if header & 0xFF == EXCEPTION:
        raise ThriftError(_first_string(reader) or "the metastore raised an exception")
    answer = None
    while (kind := reader.byte()) != STOP:
        field = reader.i16()
        if field == 0 and kind == I32:
            answer = reader.i32()
        elif kind == STRUCT:
            raise ThriftError(_first_string(reader) or "the metastore raised an exception")
        else:
            reader.skip(kind)
    if answer is None:
        raise ThriftError("the metastore answered without a count")
    return answer


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def _string_field(field: int, text: str) -> bytes:
    return struct.pack(">bh", STRING, field) + _string(text)


def _first_string(reader: _Reader) -> str | None:
    """The first string field of the struct at hand (an exception's message), the rest skipped."""
    message = None
    while (kind := reader.byte()) != STOP:
        reader.i16()
        if kind == STRING and message is None:
            message = reader.string()
        else:
            reader.skip(kind)
    return message


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ThriftError("the metastore closed the connection")
            data += chunk
        return data

    def byte(self) -> int:
        return self.read(1)[0]

    def i16(self) -> int:
        return struct.unpack(">h", self.read(2))[0]

    def i32(self) -> int:
        return struct.unpack(">i", self.read(4))[0]

    def string(self) -> str:
        return self.read(self.i32()).decode(errors="replace")

    def skip(self, kind: int) -> None:
        sizes = {2: 1, 3: 1, 4: 8, 6: 2, 8: 4, 10: 8}  # bool, byte, double, i16, i32, i64
        if kind in sizes:
            self.read(sizes[kind])
        elif kind == STRING:
            self.read(self.i32())
        elif kind == STRUCT:
            while (inner := self.byte()) != STOP:
                self.i16()
                self.skip(inner)
        elif kind in (14, 15):  # set, list
            inner, size = self.byte(), self.i32()
            for _ in range(size):
                self.skip(inner)
        elif kind == 13:  # map
            key, value, size = self.byte(), self.byte(), self.i32()
            for _ in range(size):
                self.skip(key)
                self.skip(value)
        else:
            raise ThriftError(f"unknown Thrift type {kind}")
