"""A Delta table's live state, read from its own log (``_delta_log``), never from the metastore's placeholder.

Spark registers a Delta table in the metastore with a placeholder schema (``col array<string>``) and keeps the
truth in the log at the table's root, as Delta's PROTOCOL.md lays it out: commits ``<version>.json`` (20 digits,
newline-delimited JSON actions), checkpoints holding the replay of every action up to their version (a classic
``<version>.checkpoint.parquet``, a multi-part ``<version>.checkpoint.<part>.<parts>.parquet``, a UUID-named V2
``<version>.checkpoint.<uuid>.json`` or ``.parquet``), and ``_last_checkpoint`` pointing at a recent one. The latest
snapshot is the newest complete checkpoint, then the commits after it in order; of its actions only ``protocol``
and ``metaData`` are read, the last of each winning (``commitInfo``, files and the rest say nothing of the schema).
A checkpoint's parquet is read with pyarrow (schemaflow's extra ``delta``), its ``protocol`` and ``metaData``
columns alone.

The location is whatever registered the table wrote, so the log is read as hostile input, as an Iceberg table's
metadata is (``catalog.metadata_files``): an absolute local path, or a location on its database's own object storage
or HDFS (read through pyarrow's file systems); names in the log matched exactly, regular files only (no link),
opened without blocking; at most ``MAX_LOG_FILE_BYTES`` a file and ``MAX_LOG_BYTES`` a log, within the command's
budget (``catalog.metadata_bounds``); at most ``MAX_COMMITS`` commits after the checkpoint; JSON no deeper than
Python parses, types no deeper than ``MAX_TYPE_DEPTH``. Every failure is ``Unreadable``: one line naming the kind of
failure, quoting nothing of the files.
"""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from schemaflow.catalog.metadata_bounds import Allowance
from schemaflow.catalog.metadata_files import NotRegular, bounded, check_location, json_int, json_text, limit, \
    local_bytes, open_regular, parsed_json, why
from schemaflow.catalog.metadata_readers import OWN_METADATA, TABLE_TYPE, Unreadable
from schemaflow.model import SCHEMAFLOW_PREFIX, Column, DeltaState, Table, recorded
from schemaflow.sql.spark_json import CHAR_VARCHAR, spark_column
from schemaflow.sql.table_kinds import DELTA, PROVIDER, data_source_provider

DELTA_LOG = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
COLUMN_MAPPING = "delta.columnMapping.mode"
# One commit or JSON checkpoint (a commit adding 100,000 files is about 50 MiB).
MAX_LOG_FILE_BYTES = 64 * 2**20
# All the files of one table's log together (a checkpoint's two columns read, and the commits after it).
MAX_LOG_BYTES = 512 * 2**20
# Commits replayed after the checkpoint: Delta's writers checkpoint every 10 to 100 commits.
MAX_COMMITS = 10_000
# Names in ``_delta_log`` listed (a log keeps 30 days of commits by default, each with its checksum file).
MAX_LISTED = 1_000_000
# How deep a column's type may nest (Spark itself has no bound; a real schema nests a few levels).
MAX_TYPE_DEPTH = 64
INSTALL = "install schemaflow with its extra delta (pip install '<where schemaflow comes from>[delta]')"
REACH = ("plan where the table's storage is reachable (for s3:// or hdfs://, with pyarrow's file systems: "
         f"schemaflow's extra delta), and {OWN_METADATA}")
CHECKPOINT = ("run a checkpoint on the table (Delta's writers make one every few commits; delta-spark: "
              "DeltaTable.forPath(spark, path).checkpoint()), then plan again")
# How long a read from object storage may wait to connect and for each request, in seconds.
_CONNECT_SECONDS, _REQUEST_SECONDS = 10, 60
_VERSION = "[0-9]{20}"
_COMMIT = re.compile(f"({_VERSION})\\.json")
_CLASSIC = re.compile(f"({_VERSION})\\.checkpoint\\.parquet")
_PART = re.compile(f"({_VERSION})\\.checkpoint\\.([0-9]{{10}})\\.([0-9]{{10}})\\.parquet")
_UUID_NAMED = re.compile(f"({_VERSION})\\.checkpoint\\.[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-"
                         "[0-9a-f]{12}\\.(json|parquet)")
# What a table's id, a feature's name and a type's name may be: Delta writes no other, and they reach plans.
_TABLE_ID = re.compile(r"[A-Za-z0-9-]{1,64}")
_FEATURE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_ATOMIC = re.compile(r"string|long|integer|short|byte|float|double|boolean|binary|date|timestamp|timestamp_ntz|"
                     r"variant|void|decimal\([0-9]{1,2}, ?[0-9]{1,2}\)")
_CHAR_VARCHAR = re.compile(r"(?:var)?char\([0-9]{1,5}\)")
_MAPPING_MODES = ("none", "name", "id")
# Features whose table's latest commits are with a catalog, not (yet) in the log: the log alone is not the truth.
_CATALOG_MANAGED = frozenset({"catalogManaged", "catalogOwned-preview", "coordinatedCommits-preview"})


@dataclass(frozen=True)
class DeltaSnapshot:
    """A Delta table's latest snapshot, as its log says: where the log stands, its columns and table metadata."""

    state: DeltaState
    columns: tuple[Column, ...]            # data columns (schema order, partition columns excluded)
    partition_columns: tuple[Column, ...]  # in metaData.partitionColumns order
    comment: str | None                    # metaData.description
    properties: Mapping[str, str]          # metaData.configuration, as is (delta.* and the user's)
    # The column names the schema spells with capitals (``columns`` holds them in lower case), in schema order.
    spelt: tuple[str, ...] = field(default=())


def is_delta(parameters: Mapping[str, str]) -> bool:
    """Whether the catalog's parameters of a table say it is a Delta table: Spark's provider ``delta`` (what delta-spark
    registers), or ``table_type`` ``DELTA`` (what Athena's ``CREATE EXTERNAL TABLE ... TBLPROPERTIES ('table_type' =
    'DELTA')`` registers in Glue: a location, no columns, the log the only schema)."""
    return (data_source_provider(parameters.get(PROVIDER)) == DELTA
            or str(parameters.get(TABLE_TYPE, "")).lower() == DELTA)


def delta_table(database: str, name: str, snapshot: DeltaSnapshot) -> Table:
    """The live table a Delta log's snapshot describes; schemaflow's own keys in its configuration are its stamp."""
    return Table(database=database, name=name, columns=snapshot.columns,
                 partition_columns=snapshot.partition_columns, comment=snapshot.comment, format=DELTA,
                 data_source=True, delta=snapshot.state, spelt=snapshot.spelt,
                 properties={k: v for k, v in sorted(snapshot.properties.items()) if not k.startswith(SCHEMAFLOW_PREFIX)},
                 **recorded(snapshot.properties))


def read_delta_log(location: str, storage: Sequence[str | None] = (), allowance: Allowance | None = None) -> DeltaSnapshot:
    """The latest snapshot of the Delta table whose root is ``location``, read within the bounds above; ``storage``:
    the locations (its database's) whose ``scheme://authority`` a location in another scheme must share;
    ``allowance``: what is left of the command's budget, which the read spends (None: the log's bounds alone).
    Raises ``Unreadable``."""
    local = check_location(location, storage, "the Delta table location", "the Delta table")
    log: _Log = _LocalLog(location, local) if local is not None else _RemoteLog(location)
    reading = _Reading(log, allowance)
    names = log.names()
    commits = sorted(int(m.group(1)) for m in map(_COMMIT.fullmatch, names) if m)
    checkpoint = _checkpoint(names, reading)
    start = checkpoint[0] if checkpoint else -1
    after = [version for version in commits if version > start]
    if checkpoint is None and not commits:
        raise Unreadable(f"the Delta log of {location!r} holds no commit: it is not a Delta table's")
    if checkpoint is None and commits[0] != 0:
        raise Unreadable(f"the Delta log of {location!r} holds no checkpoint and its first commits are gone: it "
                         "cannot be read")
    if after != list(range(start + 1, start + 1 + len(after))):
        raise Unreadable(f"the Delta log of {location!r} misses a commit after version {start}: it cannot be read")
    if len(after) > MAX_COMMITS:
        raise Unreadable(f"the Delta log of {location!r} holds {len(after):,} commits after its last checkpoint, more "
                         f"than the {MAX_COMMITS:,} schemaflow reads", CHECKPOINT)
    protocol, metadata = reading.checkpoint_actions(checkpoint[1]) if checkpoint else (None, None)
    for version in after:
        for action in reading.commit_actions(f"{version:020d}.json"):
            protocol = action.get("protocol", protocol)
            metadata = action.get("metaData", metadata)
    return _snapshot(location, after[-1] if after else start, protocol, metadata)


def _checkpoint(names: Sequence[str], reading: _Reading) -> tuple[int, tuple[str, ...]] | None:
    """The newest complete checkpoint in the log (its version and files), or None; ``_last_checkpoint``, where there
    is one, must name one that is there."""
    found: dict[int, list[tuple[int, tuple[str, ...]]]] = {}  # version -> (preference, files)
    parts: dict[tuple[int, int], set[int]] = {}
    for name in names:
        if (classic := _CLASSIC.fullmatch(name)) is not None:
            found.setdefault(int(classic.group(1)), []).append((0, (name,)))
        elif (named := _UUID_NAMED.fullmatch(name)) is not None:
            found.setdefault(int(named.group(1)), []).append((1, (name,)))
        elif (part := _PART.fullmatch(name)) is not None:
            parts.setdefault((int(part.group(1)), int(part.group(3))), set()).add(int(part.group(2)))
    for (version, count), numbers in parts.items():
        if count > 1 and numbers == set(range(1, count + 1)):  # a multi-part checkpoint missing a part is ignored
            found.setdefault(version, []).append(
                (2, tuple(f"{version:020d}.checkpoint.{n:010d}.{count:010d}.parquet" for n in range(1, count + 1))))
    if LAST_CHECKPOINT in names:
        last = reading.last_checkpoint()
        if last not in found:
            raise Unreadable(f"the Delta log of {reading.log.location!r} names in {LAST_CHECKPOINT} a checkpoint that "
                             "is not in it: it cannot be read")
    if not found:
        return None
    version = max(found)
    return version, min(found[version])[1]


def _snapshot(location: str, version: int, protocol: Any, metadata: Any) -> DeltaSnapshot:
    """The snapshot a log's last ``protocol`` and ``metaData`` actions describe at ``version``. Raises
    ``Unreadable`` when they are missing or not shaped as Delta's, saying how in words of its own."""
    if protocol is None or metadata is None:
        raise Unreadable(f"the Delta log of {location!r} holds no {'protocol' if protocol is None else 'metaData'} "
                         "action: it is not a Delta table's")
    try:
        return _shaped(location, version, protocol, metadata)
    except (KeyError, IndexError) as error:
        how = "a field Delta requires is missing"
        failure: Exception = error
    except (TypeError, AttributeError) as error:
        how, failure = "a field holds another kind of value than Delta's protocol gives it", error
    except ValueError as error:
        how, failure = "a value is not one Delta's protocol allows there", error
    except RecursionError as error:
        how, failure = "a column's type nests deeper than schemaflow reads", error
    raise Unreadable(f"the Delta log of {location!r} does not hold a Delta table's metadata ({type(failure).__name__}: "
                     f"{how})")


def _shaped(location: str, version: int, protocol: Mapping[str, Any], metadata: Mapping[str, Any]) -> DeltaSnapshot:
    reader, writer = json_int(protocol["minReaderVersion"]), json_int(protocol["minWriterVersion"])
    reader_features = _features(protocol.get("readerFeatures")) if reader >= 3 else ()
    writer_features = _features(protocol.get("writerFeatures")) if writer >= 7 else ()
    if _CATALOG_MANAGED & {*reader_features, *writer_features}:
        raise Unreadable(f"the Delta table at {location!r} is managed by a catalog, which holds its latest commits: "
                         "schemaflow reads the log alone", "manage it through its catalog, not schemaflow")
    configuration = {json_text(k): json_text(v) for k, v in _mapping(metadata["configuration"]).items()}
    mapping_mode = configuration.get(COLUMN_MAPPING, "none")
    if mapping_mode not in _MAPPING_MODES:
        raise ValueError("column mapping mode")
    schema = parsed_json(json_text(metadata["schemaString"]).encode(), location, "the schema in the Delta log of",
                         "Spark's")
    fields = schema["fields"]
    for one in fields:
        _check_field(one, 0)
    columns = [spark_column(one) for one in fields]
    by_name = {column.name: column for column in columns}
    partitioned = [json_text(name).lower() for name in metadata["partitionColumns"]]
    table_id = json_text(metadata["id"])
    if not _TABLE_ID.fullmatch(table_id):
        raise ValueError("table id")
    return DeltaSnapshot(
        state=DeltaState(location, version, table_id, reader, writer, reader_features, writer_features, mapping_mode),
        columns=tuple(column for column in columns if column.name not in partitioned),
        partition_columns=tuple(by_name[name] for name in partitioned),
        comment=json_text(metadata.get("description")) or None,
        properties=dict(sorted(configuration.items())),
        spelt=tuple(one["name"] for one in fields if one["name"] != one["name"].lower()))


def _check_field(one: Mapping[str, Any], depth: int) -> None:
    """A field of Spark's JSON schema as Delta writes one (a name, a type Delta has, text metadata); a
    ``ValueError``, ``TypeError`` or ``KeyError`` for anything else."""
    json_text(one["name"])
    metadata = _mapping(one.get("metadata", {}))
    json_text(metadata.get("comment"))
    declared = metadata.get(CHAR_VARCHAR)
    if declared is not None and not _CHAR_VARCHAR.fullmatch(json_text(declared)):
        raise ValueError("char or varchar")
    _check_type(one["type"], depth)


def _check_type(type_: Any, depth: int) -> None:
    if depth > MAX_TYPE_DEPTH:
        raise RecursionError("type nests too deep")
    if isinstance(type_, str):
        if not _ATOMIC.fullmatch(type_):
            raise ValueError("type")
        return
    match _mapping(type_)["type"]:
        case "array":
            _check_type(type_["elementType"], depth + 1)
        case "map":
            _check_type(type_["keyType"], depth + 1)
            _check_type(type_["valueType"], depth + 1)
        case "struct":
            for one in type_["fields"]:
                _check_field(one, depth + 1)
        case _:
            raise ValueError("type")


def _features(listed: Any) -> tuple[str, ...]:
    if listed is None:
        return ()
    if not isinstance(listed, list):
        raise TypeError("not a list")
    if not all(_FEATURE.fullmatch(json_text(name)) for name in listed):
        raise ValueError("feature")
    return tuple(sorted(set(listed)))


def _mapping(value: Any) -> Mapping[str, Any]:
    """A map of the log's: a JSON object, or the (key, value) pairs pyarrow gives a parquet map as."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, list) and all(isinstance(pair, tuple) and len(pair) == 2 for pair in value):
        return dict(value)
    raise TypeError("not a map")


class _Log(Protocol):
    """Where a table's ``_delta_log`` is, local or remote: its names, and each file's bytes or stream."""

    location: str

    def names(self) -> list[str]: ...

    def read(self, name: str, most: int, allowance: Allowance | None) -> bytes: ...

    def open(self, name: str) -> BinaryIO: ...


class _LocalLog:
    def __init__(self, location: str, path: str) -> None:
        self.location = location
        self.path = os.path.join(path, DELTA_LOG)

    def names(self) -> list[str]:
        try:
            with os.scandir(self.path) as listing:
                names = []
                for entry in listing:
                    names.append(entry.name)
                    if len(names) > MAX_LISTED:
                        raise Unreadable(f"the Delta log of {self.location!r} holds more than {MAX_LISTED:,} files, more "
                                         "than schemaflow lists", CHECKPOINT)
                return names
        except FileNotFoundError:
            raise Unreadable(f"the Delta table location {self.location!r} holds no {DELTA_LOG}: it is not a Delta "
                             "table's") from None
        except NotADirectoryError:
            raise Unreadable(f"the {DELTA_LOG} of {self.location!r} is not a folder") from None
        except OSError as error:
            raise Unreadable(f"the Delta log of {self.location!r} cannot be listed ({why(error)})", REACH) from None

    def read(self, name: str, most: int, allowance: Allowance | None) -> bytes:
        return local_bytes(os.path.join(self.path, name), f"{self.location}/{DELTA_LOG}/{name}", allowance, most,
                           REACH, "the Delta log file", "the Delta log file", follow=False)

    def open(self, name: str) -> BinaryIO:
        where = f"{self.location}/{DELTA_LOG}/{name}"
        try:
            return os.fdopen(open_regular(os.path.join(self.path, name), follow=False), "rb")
        except NotRegular:
            raise Unreadable(f"the Delta log file {where!r} is not a regular file") from None
        except OSError as error:
            raise Unreadable(f"the Delta log file {where!r} cannot be opened ({why(error)})", REACH) from None


class _RemoteLog:
    """A log on object storage or HDFS, through pyarrow's file systems (on a location ``check_location`` passed)."""

    def __init__(self, location: str) -> None:
        self.location = location
        try:
            from pyarrow import fs
        except ImportError:
            raise Unreadable(f"reading the Delta log of {location!r} needs pyarrow's file systems: {INSTALL}",
                             REACH) from None
        self.fs = fs
        try:
            self.filesystem, root = _filesystem(location)
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise Unreadable(f"the Delta table location {location!r} cannot be reached ({type(error).__name__})",
                             REACH) from None
        self.path = f"{root.rstrip('/')}/{DELTA_LOG}"

    def names(self) -> list[str]:
        try:
            listed = self.filesystem.get_file_info(self.fs.FileSelector(self.path))
        except FileNotFoundError:
            raise Unreadable(f"the Delta table location {self.location!r} holds no {DELTA_LOG}: it is not a Delta "
                             "table's") from None
        except (OSError, ValueError) as error:
            raise Unreadable(f"the Delta log of {self.location!r} cannot be listed ({type(error).__name__})",
                             REACH) from None
        if len(listed) > MAX_LISTED:
            raise Unreadable(f"the Delta log of {self.location!r} holds more than {MAX_LISTED:,} files, more than "
                             "schemaflow lists", CHECKPOINT)
        return [info.base_name for info in listed if info.type == self.fs.FileType.File]

    def read(self, name: str, most: int, allowance: Allowance | None) -> bytes:
        where = f"{self.location}/{DELTA_LOG}/{name}"
        reads = limit(allowance, most)
        with self.open(name) as stream:
            try:
                content = stream.read(reads + 1)
            except (OSError, ValueError) as error:
                raise Unreadable(f"the Delta log file {where!r} cannot be read ({type(error).__name__})",
                                 REACH) from None
        if allowance is not None:
            allowance.took(len(content))
        return bounded(content, where, reads, allowance, most, "the Delta log file")

    def open(self, name: str) -> BinaryIO:
        try:
            stream: BinaryIO = self.filesystem.open_input_file(f"{self.path}/{name}")
            return stream
        except (OSError, ValueError) as error:
            where = f"{self.location}/{DELTA_LOG}/{name}"
            raise Unreadable(f"the Delta log file {where!r} cannot be opened ({type(error).__name__})", REACH) from None


def _filesystem(location: str) -> tuple[Any, str]:
    """pyarrow's file system of a remote location, and the path in it (S3's with timeouts: by default it waits
    as long as a connection stays open)."""
    from pyarrow import fs
    scheme, _, rest = location.partition("://")
    if scheme.lower() in ("s3", "s3a", "s3n"):
        return fs.S3FileSystem(connect_timeout=_CONNECT_SECONDS, request_timeout=_REQUEST_SECONDS), rest
    filesystem, path = fs.FileSystem.from_uri(location)
    return filesystem, str(path)


class _Reading:
    """One read of a log: the files it reads, each bounded alone, all together by ``MAX_LOG_BYTES`` and the command's
    allowance."""

    def __init__(self, log: _Log, allowance: Allowance | None) -> None:
        self.log = log
        self.allowance = allowance
        self.spent = 0

    def _most(self) -> int:
        """The most the next file may hold; an ``Unreadable`` once the log has taken all it may."""
        if self.spent >= MAX_LOG_BYTES:
            raise Unreadable(f"the Delta log of {self.log.location!r} holds more than the {MAX_LOG_BYTES:,} bytes "
                             "schemaflow reads of one table", CHECKPOINT)
        if self.allowance is not None and self.allowance.left <= 0:
            self.allowance.refuse()
        return MAX_LOG_FILE_BYTES

    def bytes(self, name: str) -> bytes:
        content = self.log.read(name, self._most(), self.allowance)
        self.spent += len(content)
        return content

    def last_checkpoint(self) -> int:
        """The version ``_last_checkpoint`` names."""
        data = parsed_json(self.bytes(LAST_CHECKPOINT), self._where(LAST_CHECKPOINT), "the Delta log file", "Delta's")
        version = data.get("version") if isinstance(data, dict) else None
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise Unreadable(f"the Delta log file {self._where(LAST_CHECKPOINT)!r} does not name a checkpoint's version")
        return version

    def commit_actions(self, name: str) -> Iterator[Mapping[str, Any]]:
        """The actions of a newline-delimited JSON file of the log (a commit, a V2 checkpoint in JSON)."""
        where = self._where(name)
        for line in self.bytes(name).splitlines():
            if not line.strip():
                continue
            action = parsed_json(line, where, "the Delta log file", "Delta's")
            if not isinstance(action, dict):
                raise Unreadable(f"the Delta log file {where!r} holds a line that is not a JSON object")
            yield action

    def checkpoint_actions(self, names: Sequence[str]) -> tuple[Any, Any]:
        """The ``protocol`` and ``metaData`` actions of a checkpoint's files (None where it holds none)."""
        protocol: Any = None
        metadata: Any = None
        for name in names:
            if name.endswith(".json"):
                for action in self.commit_actions(name):
                    protocol = action.get("protocol", protocol)
                    metadata = action.get("metaData", metadata)
                continue
            found = self._parquet_actions(name)
            protocol = found[0] if found[0] is not None else protocol
            metadata = found[1] if found[1] is not None else metadata
        return protocol, metadata

    def _parquet_actions(self, name: str) -> tuple[Any, Any]:
        """The last ``protocol`` and ``metaData`` of a checkpoint's parquet file, its two columns read alone: the
        bytes pyarrow reads of it are counted, and a read past the log's bound or the command's fails."""
        where = self._where(name)
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise Unreadable(f"reading the Delta checkpoint {where!r} needs pyarrow: {INSTALL}", REACH) from None
        self._most()
        log_left = MAX_LOG_BYTES - self.spent
        budget_first = self.allowance is not None and self.allowance.left < log_left
        failure: Exception | None = None
        with self.log.open(name) as raw:
            counted = _Counted(raw, limit(self.allowance, log_left))
            try:
                checkpoint = pq.ParquetFile(counted)
                wanted = [column for column in ("protocol", "metaData") if column in checkpoint.schema_arrow.names]
                table = checkpoint.read(columns=wanted)
                found = [table.column(column).drop_null().to_pylist()[-1:] if column in wanted else []
                         for column in ("protocol", "metaData")]
            except Exception as error:  # noqa: BLE001 -- pyarrow fails on a file that is not parquet in errors of many types
                failure = error
            finally:
                self.spent += counted.read_bytes
                if self.allowance is not None:
                    self.allowance.took(counted.read_bytes)
        if counted.over and budget_first and self.allowance is not None:
            self.allowance.refuse()
        if counted.over:
            raise Unreadable(f"the Delta log of {self.log.location!r} holds more than the {MAX_LOG_BYTES:,} bytes "
                             "schemaflow reads of one table", CHECKPOINT)
        if failure is not None:
            raise Unreadable(f"the Delta checkpoint {where!r} is not parquet schemaflow reads "
                             f"({type(failure).__name__})")
        return (found[0] or [None])[0], (found[1] or [None])[0]

    def _where(self, name: str) -> str:
        return f"{self.log.location}/{DELTA_LOG}/{name}"


class _Counted(io.RawIOBase):
    """A file read through a count of its bytes, which fails past ``most`` (pyarrow reads a parquet file by seeks
    and reads of its own)."""

    def __init__(self, raw: BinaryIO, most: int) -> None:
        self.raw, self.most, self.read_bytes, self.over = raw, most, 0, False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def readinto(self, buffer: Any) -> int:
        wanted = len(buffer)
        if self.read_bytes + wanted > self.most:
            self.over = True
            raise OSError("more than schemaflow reads")
        data = self.raw.read(wanted)
        buffer[:len(data)] = data
        self.read_bytes += len(data)
        return len(data)
