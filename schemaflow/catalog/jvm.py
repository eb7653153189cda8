"""Failures in the JVM, told as one readable line instead of a Java stack trace.

A py4j call that fails raises ``Py4JJavaError``, or one of PySpark's own exception classes when
PySpark recognises the Java class. Either way the Java throwable and its causes are there; the
deepest cause with a message is the most specific, so its first line is what the user reads. A
failure to talk to a Thrift metastore anywhere in the chain is reported as such, naming it.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from collections.abc import Iterator

from py4j.protocol import Py4JError, Py4JNetworkError
from pyspark.errors import PySparkException

from schemaflow.errors import SchemaflowError, Unreachable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MAX_CAUSES = 20
# What a call into the JVM raises when the Java side fails (PySpark's classes for what it recognises).
JAVA_ERRORS = (Py4JError, PySparkException)


def jvm_view(spark: SparkSession) -> Any:
    """The py4j view of ``spark``'s JVM, through which Java classes are reached (``view.java.util``)."""
    view = spark.sparkContext._jvm
    # PySpark types it Optional, but sets it when the gateway starts (before any session exists)
    # and never clears it, so a session always has one.
    assert view is not None, "a SparkSession without a JVM"
    return view


@contextmanager
def java_errors(doing: str, endpoint: str) -> Iterator[None]:
    """Turn a JVM failure inside the block into ``SchemaflowError("<doing>: <message>")``.

    ``endpoint`` names the metastore, for the message when it cannot be reached.
    """
    try:
        yield
    except Py4JNetworkError as error:
        raise SchemaflowError(f"{doing}: the Spark JVM is gone ({error})") from None
    except JAVA_ERRORS as error:
        if unreachable(error):
            raise Unreachable(f"cannot reach the Hive metastore ({endpoint}): {java_message(error)}") from None
        raise SchemaflowError(f"{doing}: {java_message(error)}") from None


def java_message(error: Exception) -> str:
    """The first line of the most specific message behind ``error``: its deepest Java cause's."""
    messages = [str(t.getMessage()).strip() for t in java_chain(error) if t.getMessage()]
    text = next((m for m in reversed(messages) if m), None) or str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def java_chain(error: Exception) -> list[Any]:
    """The Java throwable behind ``error`` and its causes, outermost first."""
    # PySpark's own exception classes keep the Java original in ``_origin``.
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    chain: list[Any] = []
    while throwable is not None and len(chain) < MAX_CAUSES:
        chain.append(throwable)
        throwable = throwable.getCause()
    return chain


def unreachable(error: Exception) -> bool:
    """Whether ``error`` means the metastore could not be talked to (down, or a broken connection)."""
    return any(_is_transport(throwable) for throwable in java_chain(error))


def _is_transport(throwable: Any) -> bool:
    """Whether ``throwable`` means the metastore could not be talked to at all."""
    name = throwable.getClass().getName()
    return name.startswith(("org.apache.thrift.transport.", "java.net.")) or \
        "TTransportException" in (throwable.getMessage() or "")
