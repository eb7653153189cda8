"""The embedded metastore, served: a metastore server on the project's own Derby database, started on first use.

An embedded Derby metastore admits one process, so every command that read it started a JVM of its own
and opened it (5 to 20 s for a plan that changes nothing). Instead, the first command that reads it
starts a local metastore server on that database (``LocalMetastore.java``: Hive's handler from pyspark's
jars, listening on the loopback address alone, answering its own user alone where the system says who
connects), and it and every later command read it without a JVM,
as they read a ``thrift://`` metastore. A watcher process stops the server once no schemaflow command
has used it and no client has been connected for the idle time (``metastore.local_server``, minutes).

The commands that write (apply, ``view-partitions sync``, restore) go through the server too, their
Spark's metastore client pointed at it as a notebook's is: the server stays up across plan, apply and
plan, and any other client (a Spark session of the user's own) shares the metastore at the address
``schemaflow metastore status`` prints, while schemaflow applies, instead of being refused by Derby's
lock. Their writes are guarded by the server's compare-and-swap (HIVE-26882), which the Hive of pyspark
4's jars has (``guards``). Where the server's Hive lacks it (pyspark 3.5's 2.3.9), a command that writes
stops the server and opens the database in its own JVM, where it checks each guard itself
(``catalog.hive.spark_compat``): no other process can write there meanwhile.

Its state is files in the project's state directory: ``metastore-server.json`` (written once it serves:
the watcher's and the server's process ids, the port; its modification time is the last use), a lock
file that makes starting and stopping one process's work at a time, and the server's log. The compiled
launcher is kept there too, compiled again when its source changes.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TextIO

from schemaflow.catalog.hive.private_file import private_file
from schemaflow.catalog.hive.spark_compat import enforces_guards
from schemaflow.catalog.hive.spark_home import java, pyspark_folder
from schemaflow.errors import SchemaflowError
from schemaflow.processes import accepts, alive, runs
from schemaflow.project import STATE_DIR, Settings
from schemaflow.wording import duration

STATE_FILE = "metastore-server.json"
LOCK_FILE = "metastore-server.lock"
LOG_FILE = "metastore-server.log"
ARGUMENTS_FILE = "metastore-server.args"
SOURCE = Path(__file__).with_name("LocalMetastore.java")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
# Without this selector Hive's metastore dies with NoClassDefFoundError: com/lmax/disruptor.
LOG4J_SELECTOR = "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector"
START_SECONDS = 120.0   # how long a start may take before it is given up (a busy machine's first)
STOP_SECONDS = 30.0     # how long the server may take to let go of the database
EXITED = "schemaflow: the local metastore server exited"  # the watcher's last line in the log
DERBY_LOCKED = "Another instance of Derby may have already booted the database"
WATCHER = "schemaflow.catalog.hive.local_server"  # the watcher's module, run with python -m
SERVER = "LocalMetastore"                    # the server's main class
PR_SET_PDEATHSIG = 1                         # Linux's prctl: a signal for this process when its parent ends


@dataclass(frozen=True)
class Served:
    """A local metastore server that serves: where, by which processes, and how long it stays unused."""

    port: int
    pid: int            # the watcher's
    server_pid: int
    idle_seconds: float
    started: float      # the epoch second it began to serve

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"


def state_directory(settings: Settings) -> Path:
    """Where the embedded Derby metastore, its server's state, derby.log and the JVM's logs live."""
    return Path(settings.derby_dir or STATE_DIR).resolve()


def derby_url(state_dir: Path) -> str:
    """The JDBC address of the embedded metastore's Derby database in ``state_dir``."""
    return f"jdbc:derby:;databaseName={state_dir / 'metastore_db'};create=true"


def derby_endpoint(database: str) -> str:
    """How a plan names the embedded metastore in the Derby database ``database``: the same whether a
    command read it served or opened it, so that a plan made either way applies."""
    return f"embedded Derby at {database}"


def serves(settings: Settings) -> bool:
    """Whether the embedded metastore of ``settings`` is read through a local server: it is embedded (no
    metastore address) and ``metastore.local_server`` is not 0."""
    return not settings.metastore_uri and settings.local_server_minutes > 0


def guards() -> bool:
    """Whether the local server (Hive's metastore from pyspark's jars) enforces compare-and-swap guards, so that a
    command that writes can write through it (see the module's docstring); read from its jar's name, without a JVM."""
    folder = pyspark_folder()
    jars = sorted((folder / "jars").glob("hive-metastore-*.jar")) if folder is not None else []
    return bool(jars) and enforces_guards(jars[0].name.removeprefix("hive-metastore-").removesuffix(".jar"))


def running(state_dir: Path) -> Served | None:
    """The local server serving the database in ``state_dir``, if one is; a state file left by a server
    that is gone (a machine restarted, a process killed), or naming processes that are not this folder's watcher
    and server (their ids taken by other programs since), is removed. A server whose watcher was killed is stopped
    first: nothing else would stop it, and it holds the database."""
    state = state_dir / STATE_FILE
    try:
        served = Served(**json.loads(state.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    watched = runs(served.pid, WATCHER, str(state_dir.resolve()))
    serving = runs(served.server_pid, SERVER, str(served.port))
    if watched and serving and accepts(served.port):
        return served
    if serving and not watched:
        _end(served.server_pid)
    state.unlink(missing_ok=True)
    return None


def serve(settings: Settings, progress: TextIO) -> Served:
    """The local server of ``settings``' embedded metastore, started if none serves; marks it used now.
    Raises ``NotServed`` (saying why) where it cannot start: the caller opens the database itself."""
    state_dir = state_directory(settings)
    with usable(state_dir), _locked(state_dir):
        served = running(state_dir) or _start(settings, state_dir, progress)
        os.utime(state_dir / STATE_FILE)  # the watcher's clock: used now
    return served


@contextmanager
def usable(state_dir: Path) -> Iterator[None]:
    """``state_dir`` made if missing; a failure there to reach, make, lock or write a file of it is one line saying
    where and what to do (``SchemaflowError``), not the ``OSError``."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        yield
    except OSError as error:
        raise SchemaflowError(_unusable(state_dir, error)) from None


def _unusable(state_dir: Path, error: OSError) -> str:
    """What to do about ``error``, met using the state folder ``state_dir``."""
    where = error.filename or state_dir
    match error.errno:
        case errno.EACCES | errno.EPERM:
            todo = f"make {state_dir} yours and writable (chmod -R u+w), or run schemaflow as the user it is for"
        case errno.EROFS:
            todo = "copy the project to a file system you can write, and run schemaflow there"
        case errno.ENOTDIR | errno.EEXIST:
            todo = f"a file stands where schemaflow keeps a folder: move {where} away, then run the command again"
        case errno.ENOSPC | errno.EDQUOT:
            todo = "free some space (the disk, or your quota, is full), then run the command again"
        case _:
            todo = f"make {state_dir} a folder you can write, then run the command again"
    return (f"cannot use the state folder {state_dir} (the embedded metastore and its server's files): {where}: "
            f"{error.strerror or error}; {todo}")


def stop(state_dir: Path, progress: TextIO | None = None, why: str = "") -> Served | None:
    """Stop the local server of the database in ``state_dir`` and wait until it has let go of it; returns
    what it stopped (None: none served)."""
    if not (state_dir / STATE_FILE).exists():
        return None
    with usable(state_dir), _locked(state_dir):
        served = running(state_dir)
        if served is None:
            return None
        if progress is not None:
            progress.write(f"Stopping the local metastore server ({served.uri}){why} ...\n")
            progress.flush()
        _end(served.pid, served.server_pid)
        (state_dir / STATE_FILE).unlink(missing_ok=True)
    return served


def _end(first: int, *then: int) -> None:
    """SIGTERM to ``first``, then wait until it and ``then`` have ended; after ``STOP_SECONDS``, SIGKILL to all."""
    _signal(first, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while any(alive(pid) for pid in (first, *then)):
        if time.monotonic() > deadline:
            for pid in (*then, first):
                _signal(pid, signal.SIGKILL)
            break
        time.sleep(0.1)


class NotServed(SchemaflowError):
    """The local server could not start; the message says why and where its log is."""


def _start(settings: Settings, state_dir: Path, progress: TextIO) -> Served:
    idle_seconds = settings.local_server_minutes * 60
    progress.write(f"Starting a local metastore server on the embedded metastore in {state_dir} (once, then "
                   f"commands read it without starting Spark; it stops after {duration(idle_seconds)} unused, or "
                   "with schemaflow metastore stop) ...\n")
    progress.flush()
    started = time.monotonic()
    log = state_dir / LOG_FILE
    for stale in (state_dir / STATE_FILE, log):
        stale.unlink(missing_ok=True)
    # The server's settings (its database's JDBC URL among them) go in an argument file, not on command lines.
    with private_file(ARGUMENTS_FILE, _argument_file(_server_properties(settings, state_dir))) as arguments:
        command = [*_java_command(state_dir, arguments), str(_free_port())]
        # The watcher forks away at once (this waits for that alone) and lives on after this command.
        subprocess.run([sys.executable, "-m", "schemaflow.catalog.hive.local_server", str(state_dir), str(idle_seconds),
                        *command], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True, start_new_session=True, env={**os.environ, "PYTHONPATH": _package_path()})
        served = _wait_for_server(state_dir, log, started, progress)  # the server has read the file once it serves
    progress.write(f"Local metastore server up in {time.monotonic() - started:.1f} s at {served.uri}\n")
    progress.flush()
    return served


def _wait_for_server(state_dir: Path, log: Path, started: float, progress: TextIO) -> Served:
    """The server the watcher started, once it serves; raises ``NotServed`` where it ends first or takes too long."""
    deadline = started + START_SECONDS
    waited_for = 0
    while (served := running(state_dir)) is None:
        text = log.read_text(errors="replace") if log.exists() else ""
        if EXITED in text:
            raise NotServed(_failure(text, log))
        if time.monotonic() > deadline:
            raise NotServed(f"the local metastore server did not serve within {START_SECONDS:.0f} s (its log: {log})")
        if (seconds := int(time.monotonic() - started)) >= waited_for + 5:  # a wait that long shows progress
            waited_for = seconds
            progress.write(f"  still starting ({seconds} s) ...\n")
            progress.flush()
        time.sleep(0.1)
    return served


def _failure(text: str, log: Path) -> str:
    """Why the server ended before it served, from its log."""
    if DERBY_LOCKED in text:
        return ("the embedded metastore is open in another process (an apply running, or a Spark session of "
                f"your own on {log.parent / 'metastore_db'}): wait for it to end, or stop it")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith(("\t", " "))]
    return f"the local metastore server could not start: {' / '.join(lines[-3:])} (its log: {log})"


def _java_command(state_dir: Path, arguments: Path) -> list[str]:
    """The server's command but its port: the launcher compiled once into ``state_dir`` (again when its
    source changes), run on pyspark's jars with the settings in the argument file ``arguments``."""
    folder = pyspark_folder()
    if folder is None:
        raise NotServed("pyspark is not installed, and its jars are the metastore's")
    jars = f"{folder / 'jars'}/*"
    binary = java()
    if binary is None:
        raise NotServed("no java on PATH and JAVA_HOME is not set")
    source = SOURCE.read_bytes()
    classes = state_dir / "local-metastore" / hashlib.sha256(source).hexdigest()[:16]
    if not (classes / "LocalMetastore.class").exists():
        javac = binary.with_name("javac")
        if not javac.exists():
            raise NotServed(f"this Java has no compiler ({javac}), which the server's launcher is built with: "
                            "install a JDK rather than a JRE")
        building = classes.with_name(classes.name + f".{os.getpid()}")
        done = subprocess.run([str(javac), "-nowarn", "-cp", jars, "-d", str(building), str(SOURCE)],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise NotServed(f"compiling the server's launcher failed: {done.stderr.strip()[-500:]}")
        building.replace(classes)
    return [str(binary), "-XX:+UseSerialGC", LOG4J_SELECTOR, f"@{arguments}",
            "-cp", os.pathsep.join([str(classes), jars]), "LocalMetastore"]


def _server_properties(settings: Settings, state_dir: Path) -> dict[str, str]:
    """The server's system properties: the embedded metastore's database and warehouse, and its logging."""
    return {
        "javax.jdo.option.ConnectionURL": derby_url(state_dir),
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(settings.warehouse_dir),
        "derby.system.home": str(state_dir),
        "log4j.configurationFile": str(LOG4J_CONFIG),
    }


def _argument_file(properties: Mapping[str, str]) -> str:
    """``properties`` as ``-Dkey=value`` options in a ``java`` argument file (``java @file``): one a line, each in
    double quotes, in which a backslash escapes the next character (``\\n`` a line break)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}
    return "".join('"' + "".join(escapes.get(c, c) for c in f"-D{key}={value}") + '"\n'
                   for key, value in properties.items())


def watch(state_dir: Path, idle_seconds: float, command: list[str]) -> NoReturn:
    """The watcher: run the server, write the state file once it serves, and stop the server when it has
    gone unused for ``idle_seconds`` (no command marked it used, no client connected), when it ends, or
    when this process is told to stop. Runs in a process of its own, forked away from the command."""
    if os.fork():
        os._exit(0)  # the command waits for this process alone; the watcher is nobody's child
    log = (state_dir / LOG_FILE).open("wb")
    port = int(command[-1])
    server = subprocess.Popen(command, cwd=state_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                              preexec_fn=_ending_with(os.getpid()))
    stopping = False

    def told_to_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, told_to_stop)
    signal.signal(signal.SIGINT, told_to_stop)
    state = state_dir / STATE_FILE
    while not stopping and server.poll() is None and not accepts(port):
        time.sleep(0.05)
    if not stopping and server.poll() is None:
        served = Served(port, os.getpid(), server.pid, idle_seconds, time.time())
        written = state.with_name(f"{STATE_FILE}.{os.getpid()}")
        written.write_text(json.dumps(served.__dict__))
        written.replace(state)
    check = max(0.2, min(5.0, idle_seconds / 4))
    while not stopping and server.poll() is None:
        time.sleep(check)
        if not stopping and _unused(state, idle_seconds, port):
            with _locked(state_dir):  # a command marking it used meanwhile keeps it
                stopping = _unused(state, idle_seconds, port)
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    log.write(f"\n{EXITED} ({server.returncode})\n".encode())
    log.close()
    try:
        if json.loads(state.read_text())["pid"] == os.getpid():
            state.unlink()
    except (OSError, ValueError, KeyError):
        pass
    os._exit(0)


def _ending_with(watcher: int) -> Callable[[], None]:
    """Run in the server's process before Java starts: on Linux, it is sent SIGTERM when ``watcher`` ends, killed
    (-9) included, rather than live on holding the database; elsewhere the next command finds it (``running``)."""
    def end_with_watcher() -> None:
        try:
            prctl = ctypes.CDLL(None).prctl
        except (OSError, AttributeError):  # no prctl: not Linux
            return
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != watcher:  # it ended before the signal was asked for
            os._exit(1)
    return end_with_watcher


def _unused(state: Path, idle_seconds: float, port: int) -> bool:
    """Whether no command has marked the server used for ``idle_seconds`` and no client is connected."""
    try:
        last_use = state.stat().st_mtime
    except OSError:
        return True  # its state file is gone: nothing finds it any more
    return time.time() - last_use >= idle_seconds and not _connected(port)


def _connected(port: int) -> bool:
    """Whether a client holds a connection to ``port`` on this machine (Linux's socket tables; elsewhere,
    none is seen, and only commands' use keeps the server)."""
    local_end = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        # local_address rem_address st ...: an established connection (01) whose local end is the port
        if any(fields[1].endswith(local_end) and fields[3] == "01" for fields in map(str.split, lines)):
            return True
    return False


@contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    """One process at a time starts, stops or marks the server."""
    with (state_dir / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _package_path() -> str:
    """The folder schemaflow is imported from, first on the watcher's path: the same code runs it."""
    root = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH", "")]))


if __name__ == "__main__":
    watch(Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:])
