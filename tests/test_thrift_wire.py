"""Thrift's binary protocol as schemaflow speaks it, against a socket that answers what a test wrote.

The real metastore server is in ``test_thrift_reader_remote``; here are the answers a real server
rarely gives on demand: an exception, a server that wants SASL, one that hangs up, one that lacks
the method.
"""
from __future__ import annotations

import socket
import struct
import re
import threading
import pytest

from schemaflow.catalog.hive.thrift_reader import ThriftReader, UnsupportedMetastore, check_server, hints as plan_hints
from schemaflow.catalog.hive.thrift_wire import (EXCEPTION, I32, LIST, MAP, REPLY, STOP, STRING, STRUCT, VERSION_1,
                                            Connection, NotPlainThrift, ThriftError)
from schemaflow.errors import SchemaflowError


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def header(method: str, kind: int = REPLY) -> bytes:
    return struct.pack(">I", VERSION_1 | kind) + string(method) + struct.pack(">i", 1)


class Server:
    """A socket that reads one call per answer and writes the answers given, in order; None hangs up."""

    def __init__(self, *answers: bytes | None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.calls: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, args=(list(answers),), daemon=True)
        self.thread.start()

    def _serve(self, answers: list[bytes | None]) -> None:
        with self.listener:
            connection, _ = self.listener.accept()
            with connection:
                for answer in answers:
                    self.calls.append(connection.recv(65536))
                    if answer is None:
                        return
                    connection.sendall(answer)


def test_a_call_is_encoded_and_its_answer_decoded_by_shape() -> None:
    table = (struct.pack(">bh", STRING, 1) + string("orders")
             + struct.pack(">bh", STRUCT, 7)  # sd: cols (named), and field 99 (skipped)
             + struct.pack(">bh", LIST, 1) + struct.pack(">bi", STRUCT, 1)
             + struct.pack(">bh", STRING, 1) + string("größe") + bytes([STOP])
             + struct.pack(">bh", I32, 99) + struct.pack(">i", 5) + bytes([STOP])
             + struct.pack(">bh", MAP, 9) + struct.pack(">bbi", STRING, STRING, 1) + string("k") + string("v")
             + bytes([STOP]))
    answer = header("get_table_objects_by_name") + struct.pack(">bh", LIST, 0) + struct.pack(">bi", STRUCT, 1) \
        + table + bytes([STOP])
    server = Server(answer)
    connection = Connection(("127.0.0.1", server.port), 5, 5)
    shape = {1: "tableName", 7: ("sd", {1: ("cols", {1: "name"})}), 9: "parameters"}
    got = connection.call("get_table_objects_by_name", [(1, STRING, "db"), (2, LIST, ["orders"])], shape)
    assert got == [{"tableName": "orders", "sd": {"cols": [{"name": "größe"}]}, "parameters": {"k": "v"}}]
    assert server.calls == [struct.pack(">I", VERSION_1 | 1) + string("get_table_objects_by_name")
                            + struct.pack(">i", 1) + struct.pack(">bh", STRING, 1) + string("db")
                            + struct.pack(">bh", LIST, 2) + struct.pack(">bi", STRING, 1) + string("orders")
                            + bytes([STOP])]


def test_an_exception_the_method_declares_is_a_thrift_error_with_its_message() -> None:
    raised = header("get_database") + struct.pack(">bh", STRUCT, 1) + struct.pack(">bh", STRING, 1) \
        + string("Database nope not found") + bytes([STOP, STOP])
    server = Server(raised)
    reader = ThriftReader(f"thrift://127.0.0.1:{server.port}")
    with pytest.raises(SchemaflowError, match=r"^reading database nope: Database nope not found$"):
        reader.database("nope")


def test_an_unknown_method_is_not_plain_thrift_for_schemaflow() -> None:
    server = Server(unknown_method("get_all_databases"))
    with pytest.raises(NotPlainThrift, match="Invalid method name"):
        ThriftReader.connect(f"thrift://127.0.0.1:{server.port}")


def unknown_method(method: str) -> bytes:
    """A server's answer to a call it does not know (TApplicationException UNKNOWN_METHOD)."""
    return header(method, EXCEPTION) + struct.pack(">bh", STRING, 1) + string(f"Invalid method name: '{method}'") \
        + struct.pack(">bh", I32, 2) + struct.pack(">i", 1) + bytes([STOP])


def databases(*names: str) -> bytes:
    listed = b"".join(string(name) for name in names)
    return header("get_all_databases") + struct.pack(">bh", LIST, 0) + struct.pack(">bi", STRING, len(names)) \
        + listed + bytes([STOP])


def test_a_server_without_get_table_is_refused_as_hive_4_in_one_line_before_spark_starts() -> None:
    server = Server(databases("default"), unknown_method("get_table"))
    with pytest.raises(UnsupportedMetastore) as refused:
        check_server(f"thrift://127.0.0.1:{server.port}")
    assert str(refused.value) == (
        f"the metastore thrift://127.0.0.1:{server.port} does not know get_table (Invalid method name: 'get_table'), "
        "the call Spark's built-in Hive client reads every table with: it is a Hive 4 server, which removed it; "
        "nothing was applied. Give Spark (4.0 or later) Hive 4's client in schemaflow.yaml: spark.conf "
        "spark.sql.hive.metastore.version: 4.0.1, spark.sql.hive.metastore.jars: path and "
        "spark.sql.hive.metastore.jars.path: its jars (or the same in your Spark's spark-defaults.conf)")
    assert server.calls[1].startswith(struct.pack(">I", VERSION_1 | 1) + string("get_table"))


def test_a_server_that_has_no_such_table_knows_get_table() -> None:
    no_such_table = header("get_table") + struct.pack(">bh", STRUCT, 2) + struct.pack(">bh", STRING, 1) \
        + string("default. table not found") + bytes([STOP, STOP])
    server = Server(databases("default"), no_such_table)
    check_server(f"thrift://127.0.0.1:{server.port}")
    assert len(server.calls) == 2


def test_tables_are_read_with_the_request_struct_every_release_from_hive_2_3_to_4_answers() -> None:
    names = header("get_all_tables") + struct.pack(">bh", LIST, 0) + struct.pack(">bi", STRING, 1) + string("orders") \
        + bytes([STOP])
    tables = header("get_table_objects_by_name_req") + struct.pack(">bh", STRUCT, 0) \
        + struct.pack(">bh", LIST, 1) + struct.pack(">bi", STRUCT, 1) + struct.pack(">bh", STRING, 1) + string("orders") \
        + bytes([STOP, STOP, STOP])
    server = Server(names, tables)
    got = list(ThriftReader(f"thrift://127.0.0.1:{server.port}").table_data("db"))
    assert got == [{"tableName": "orders"}]
    # GetTablesRequest: dbName (1), tblNames (2), in the call's one argument (1).
    assert server.calls[1] == (struct.pack(">I", VERSION_1 | 1) + string("get_table_objects_by_name_req")
                               + struct.pack(">i", 2) + struct.pack(">bh", STRUCT, 1)
                               + struct.pack(">bh", STRING, 1) + string("db")
                               + struct.pack(">bh", LIST, 2) + struct.pack(">bi", STRING, 1) + string("orders")
                               + bytes([STOP, STOP]))


def test_a_sasl_answer_or_a_hang_up_on_the_first_call_is_not_plain_thrift() -> None:
    # What a SASL server answers a plain call with: an ERROR status (4) and a message.
    sasl = bytes([4]) + string("Invalid status -128")
    with pytest.raises(NotPlainThrift, match="not a Thrift binary-protocol answer"):
        ThriftReader.connect(f"thrift://127.0.0.1:{Server(sasl).port}")
    with pytest.raises(NotPlainThrift, match="hung up on a plain Thrift call"):
        ThriftReader.connect(f"thrift://127.0.0.1:{Server(None).port}")


def test_a_connection_that_breaks_after_an_answer_is_made_again_and_the_read_repeated() -> None:
    databases = header("get_all_databases") + struct.pack(">bh", LIST, 0) + struct.pack(">bi", STRING, 1) \
        + string("db") + bytes([STOP])
    first = Server(databases, None)
    waits: list[float] = []
    reader = ThriftReader(f"thrift://127.0.0.1:{first.port}", sleep=waits.append)
    assert reader.databases() == ("db",)
    # The server hung up on the second call and is gone: each attempt is refused, then the error.
    with pytest.raises(SchemaflowError, match=r"^cannot reach the Hive metastore \(thrift://127\.0\.0\.1:\d+\): "):
        reader.databases()
    assert waits == [1.0, 2.0, 4.0]


def test_partition_counts_and_sizes_for_plan_base_are_none_when_the_server_does_not_answer() -> None:
    hints = plan_hints(f"thrift://127.0.0.1:{Server(None).port}", timeout=1)
    assert (hints.count_partitions("db.t"), hints.stored("db.t")) == (None, None)
    with pytest.raises(ThriftError, match="is not a thrift://host:port metastore address"):
        plan_hints("jdbc:derby:nope")


class Trickle(Server):
    """A server that answers with a header, then a byte at a time, ``pause`` seconds apart, forever."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.stop = threading.Event()
        super().__init__()

    def _serve(self, answers: list[bytes | None]) -> None:
        with self.listener:
            connection, _ = self.listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(header("get_all_databases") + struct.pack(">bh", LIST, 0)
                                   + struct.pack(">bi", STRING, 1) + struct.pack(">i", 1000))
                while not self.stop.wait(self.pause):
                    try:
                        connection.sendall(b"x")
                    except OSError:
                        return


@pytest.mark.parametrize("answer, said", [
    (struct.pack(">bh", STRING, 0) + struct.pack(">i", 2**31 - 1), "holds more than 536,870,912 bytes"),
    (struct.pack(">bh", STRING, 0) + struct.pack(">i", -5), "(or a negative size)"),
    (struct.pack(">bh", LIST, 0) + struct.pack(">bi", STRUCT, 2**31 - 1), "holds more than 536,870,912 bytes"),
    (struct.pack(">bh", MAP, 0) + struct.pack(">bbi", STRING, STRING, 2**30), "holds more than 536,870,912 bytes"),
    (struct.pack(">bh", LIST, 0) + struct.pack(">bi", LIST, 1) * 100, "nests values more than 64 deep"),
])
def test_a_hostile_answer_is_refused_before_it_is_allocated_or_looped_over(answer, said) -> None:
    server = Server(header("get_all_databases") + answer)
    reader = ThriftReader(f"thrift://127.0.0.1:{server.port}", attempts=1)
    with pytest.raises(SchemaflowError, match=re.escape(said)):
        reader.databases()


def test_a_server_that_sends_a_byte_now_and_then_is_not_waited_on_past_the_timeout() -> None:
    server = Trickle(pause=0.05)
    waits: list[float] = []
    reader = ThriftReader(f"thrift://127.0.0.1:{server.port}", timeout=0.5, attempts=3, sleep=waits.append)
    with pytest.raises(SchemaflowError, match="did not complete its answer within 0.5 s"):
        reader.databases()
    server.stop.set()
    assert waits == []  # once, not once per attempt
