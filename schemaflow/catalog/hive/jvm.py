"""The JVM as py4j reaches it: Hive's classes where Spark loads them apart, and failures told as one line.

Spark's built-in Hive client (2.3) is on Spark's own class path, where py4j finds every class by name.
Hive client jars of another release (``spark.sql.hive.metastore.jars``, as a Hive 4 metastore needs) are
loaded by a class loader of their own, which py4j does not search: ``loaded_by`` and ``HivePackage`` find
Hive's classes through it, so that what schemaflow makes (a table, a client of its own) is of the classes
Spark's client uses.

A py4j call that fails raises ``Py4JJavaError``, or one of PySpark's own exception classes when
PySpark recognises the Java class. Either way the Java throwable and its causes are there; the
deepest cause with a message is the most specific, so its first line is what the user reads. A
failure to talk to a Thrift metastore anywhere in the chain is reported as such, naming it.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from collections.abc import Iterator

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError, Py4JNetworkError
from pyspark.errors import PySparkException

from schemaflow.catalog.hive.spark_compat import HIVE_JARS_KEY
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


def hive_class_loader(spark: SparkSession, client: Any) -> Any | None:
    """The class loader of Spark's Hive ``client`` (a ``HiveClientImpl``) where it is not Spark's own (Hive client
    jars named by ``spark.sql.hive.metastore.jars``); None for the built-in client."""
    if spark.conf.get(HIVE_JARS_KEY, "builtin") == "builtin":
        return None
    # A field, not a method: py4j lists a class's methods to call one, and some of HiveClientImpl's name Hive
    # classes that later releases removed (api.Index), which fails.
    reflect = jvm_view(spark).org.apache.commons.lang3.reflect.FieldUtils
    return reflect.readField(client, "clientLoader", True).classLoader()


def hive_conf(spark: SparkSession, client: Any) -> Any:
    """The HiveConf of Spark's Hive ``client``."""
    if hive_class_loader(spark, client) is None:
        return client.conf()
    return jvm_view(spark).org.apache.commons.lang3.reflect.FieldUtils.readField(client, "state", True).getConf()


@contextmanager
def loaded_by(spark: SparkSession, loader: Any | None) -> Iterator[Any]:
    """py4j's view of the JVM, finding classes by name through ``loader`` within the block (py4j looks a name up
    with the thread's context class loader); the view as it is for None."""
    view = jvm_view(spark)
    if loader is None:
        yield view
        return
    thread = view.java.lang.Thread.currentThread()
    before = thread.getContextClassLoader()
    thread.setContextClassLoader(loader)
    try:
        yield view
    finally:
        thread.setContextClassLoader(before)


class HivePackage:
    """A package of Hive's classes (``org.apache.hadoop.hive.metastore.api``) found through ``loader``: its classes
    made and their constants read (``package.Table()``, ``package.LockType.EXCLUSIVE``) as py4j's own package would."""

    def __init__(self, spark: SparkSession, loader: Any, name: str) -> None:
        self.spark, self.loader, self.name = spark, loader, name

    def __getattr__(self, name: str) -> HiveClass:
        return HiveClass(self.spark, self.loader, f"{self.name}.{name}")


class HiveClass:
    """One of Hive's classes found through ``loader``: called, a new object; an attribute, its static field."""

    def __init__(self, spark: SparkSession, loader: Any, name: str) -> None:
        self.spark, self.loader, self.name = spark, loader, name

    def __call__(self, *arguments: Any) -> Any:
        with loaded_by(self.spark, self.loader) as view:
            # By its full name: py4j resolves it when it is called, through the thread's class loader.
            return JavaClass(self.name, view._gateway_client)(*arguments)

    def __getattr__(self, member: str) -> Any:
        with loaded_by(self.spark, self.loader) as view:
            return getattr(JavaClass(self.name, view._gateway_client), member)


def hive_package(spark: SparkSession, loader: Any | None, name: str) -> Any:
    """The package ``name`` of Hive's classes as Spark's Hive client loads them (``loader``: ``hive_class_loader``)."""
    if loader is None:
        package = jvm_view(spark)
        for part in name.split("."):
            package = getattr(package, part)
        return package
    return HivePackage(spark, loader, name)


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
