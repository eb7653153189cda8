"""Writes to an Iceberg REST catalog, each guarded by the catalog's own commit requirements.

A write loads the object, checks the stamp it expects (``schemaflow.version``) on what it loaded, then commits with
requirements on that same state: a table's commit asserts its uuid, current schema, default spec and sort order, and
last assigned column and partition field ids; a view's, its uuid. A writer that changed any of those in between makes
the catalog answer 409, which is ``ConcurrentChange`` with nothing applied. No requirement covers properties: another
writer's properties-only commit between the load and the commit is not refused (the catalog applies schemaflow's
updates on top of it); the stamp check narrows that window to one round trip, and a stamp set by another apply in it
is overwritten. An answer that leaves a commit's fate unknown (5xx, a broken connection) is read back, never repeated:
the commit landed if the object holds the stamp it set.

The updates are those the Hive metastore's Iceberg commits apply (``catalog.iceberg_updates``), in their REST form;
a new table is created with the schema, spec, sort order and properties of the same first metadata, and a table
another catalog holds is registered by its metadata file (moving catalogs: ``plan.moving``). Views are created
and replaced through the REST view endpoints (pyiceberg 0.12 has no view commit): each version carries the run's claim
in its summary, since the catalog deduplicates equal versions and would otherwise make an earlier one current without
a new entry. Dropped tables keep their files (``purgeRequested`` false).

What the catalog cannot hold or do (Hive-format tables, column lists outside a commit, view partitions, renames and
rewrites, Spark's SQL) is refused with ``SchemaflowError`` saying so; validate refuses such projects before.
"""
from __future__ import annotations

import json
import time
import uuid
from contextlib import AbstractContextManager, nullcontext
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NoReturn

from schemaflow.catalog.backend import CatalogWriter
from schemaflow.catalog.iceberg_updates import FORMAT_VERSION, check_state, evolved, first_metadata, layout_updates, \
    property_changes
from schemaflow.catalog.rest.connection import REGISTER, TABLE, TABLES, VIEW, VIEWS, Connection, answer
from schemaflow.catalog.rest.reader import LOCATION_KEY, RestReader, table_from, texts, view_of
from schemaflow.catalog.stamping import fill_live_state
from schemaflow.errors import ConcurrentChange, SchemaflowError, Unreachable
from schemaflow.output_safety import one_line
from schemaflow.model import (COMMENT_KEY, LIVE_STATE, VERSION_KEY, Column, Database, IcebergState, PartitionValues,
                              Table, View, ViewSql, split_key)
from schemaflow.sql.iceberg_types import iceberg_type
from schemaflow.sql.rewrite import Filled

CLAIM_SUMMARY = "schemaflow.claim"  # a view version's summary key holding the run that wrote it
ENGINE = "schemaflow"
SPARK_DIALECT = "spark"
# A check_guards probe asserts a current schema id this far from the real one: the catalog must refuse it.
_PROBE_OFFSET = 1000
NOUN = "the Iceberg REST catalog"


class RestWriter:
    """Writes ``connection``'s catalog (see the module)."""

    progress: Callable[[str], None] | None = None

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.reader = RestReader(connection)
        self.endpoint = connection.settings.endpoint

    # Namespaces: no catalog versions them, so their writes are unguarded.

    def add_database(self, database: Database) -> None:
        """Create the namespace ``database`` with its comment, location and properties, unless it exists."""
        from pyiceberg.exceptions import NamespaceAlreadyExistsError

        properties = {**database.properties, **({COMMENT_KEY: database.comment} if database.comment else {}),
                      **({LOCATION_KEY: database.location} if database.location else {})}
        try:
            self.connection.catalog.create_namespace((database.name,), properties)
        except NamespaceAlreadyExistsError:
            pass

    def set_database_properties(self, name: str, properties: Mapping[str, str]) -> None:
        self.connection.catalog.update_namespace_properties((name,), updates=dict(properties))

    def update_database_properties(self, name: str, keys: Collection[str],
                                   update: Callable[[Mapping[str, str]], Mapping[str, str]]) -> None:
        """Set the properties ``update`` makes of the current values of ``keys``, read just before (unguarded)."""
        now = self.connection.catalog.load_namespace_properties((name,))
        self.set_database_properties(name, update({k: str(now[k]) for k in keys if k in now}))

    # Tables.

    def commit_iceberg(self, table: Table, sources: Mapping[str, str], requires: IcebergState | None, create: bool,
                       set: Mapping[str, str], unset: Sequence[str], expected: str | None = None,
                       backup: str | None = None, keep: bool = True) -> None:
        """Create the Iceberg table ``table``, or commit it as ``table`` says with ``set`` and ``unset`` among its
        properties, guarded as the module says."""
        if backup is not None:
            _cannot("convert a Parquet table to Iceberg in place (it holds Iceberg tables only)")
        if create:
            self._create(table, set)
        else:
            self._commit(table.key, table, sources, requires, set, unset, expected)

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        """Set and unset properties of the table or view ``key`` in one guarded commit. The table's load tells a table
        from a view (no table of the name: a view's), with no request of its own: apply claims every object this way."""
        try:
            loaded = self._load(key)
        except _Missing:
            self._commit_view(key, lambda metadata: [], set, unset, expected, claim=None)
            return
        self._commit(key, None, {}, None, set, unset, expected, loaded)

    def drop_table(self, key: str, expected: str | None) -> None:
        """Drop the table ``key`` (stamped ``expected``) from the catalog; its files are kept."""
        from pyiceberg.exceptions import NoSuchTableError

        database, name = split_key(key)
        self._loaded_table(key, expected)
        try:
            self.connection.call("DELETE", TABLE, {404: NoSuchTableError}, namespace=database, table=name)
        except NoSuchTableError:
            raise ConcurrentChange(key, expected, None) from None

    def register_table(self, key: str, metadata_location: str) -> None:
        """Register ``key`` as the Iceberg table whose current metadata file is ``metadata_location`` (the REST
        catalog's register endpoint): refused as ``ConcurrentChange`` if the name is taken (409, or a view holds it);
        an unknown outcome is read back."""
        from pyiceberg.exceptions import (RESTError, ServerError, ServiceUnavailableError, TableAlreadyExistsError)
        from requests import RequestException

        database, name = split_key(key)
        if self._is_view(key):
            raise ConcurrentChange(key, None, "a view", "catalog entry")
        try:
            self.connection.call("POST", REGISTER, {409: TableAlreadyExistsError},
                                 {"name": name, "metadata-location": metadata_location}, namespace=database)
        except TableAlreadyExistsError:
            raise ConcurrentChange(key, None, "a table registered or created by another writer",
                                   "catalog entry") from None
        except (ServerError, ServiceUnavailableError, RequestException) as error:
            try:
                landed = self._load(key).get("metadata-location") == metadata_location
            except SchemaflowError:
                landed = False
            if not landed:
                raise Unreachable(f"{NOUN} did not confirm the registration of {key} ({answer(error)}), and it did "
                                  "not land: nothing was applied; plan again") from None
        except RESTError as error:
            raise SchemaflowError(f"{NOUN} refused to register {key}: {answer(error)}; nothing was applied") from None

    def check_guards(self, key: str) -> None:
        """Refuse the catalog unless it refuses a commit whose requirement fails (a schema id it does not have)."""
        from pyiceberg.exceptions import CommitFailedException

        database, name = split_key(key)
        request: dict[str, list[dict[str, Any]]]
        if self._is_view(key):
            request = {"requirements": [{"type": "assert-view-uuid", "uuid": str(uuid.uuid4())}], "updates": []}
            endpoint, path = VIEW, {"view": name}
        else:
            loaded = self._load(key)
            schema_id = int(loaded["metadata"].get("current-schema-id", 0))
            request = {"requirements": [{"type": "assert-table-uuid", "uuid": loaded["metadata"]["table-uuid"]},
                                        {"type": "assert-current-schema-id",
                                         "current-schema-id": schema_id + _PROBE_OFFSET}], "updates": []}
            endpoint, path = TABLE, {"table": name}
        try:
            self.connection.call("POST", endpoint, {409: CommitFailedException},
                                 {"identifier": {"namespace": [database], "name": name}, **request},
                                 namespace=database, **path)
        except CommitFailedException:
            return
        raise SchemaflowError(f"{NOUN} at {self.connection.settings.uri} accepted a commit to {key} whose requirement "
                              "failed: its commits are not guarded, and schemaflow writes to no catalog whose commits "
                              "another writer's changes would not stop")

    def _create(self, table: Table, set: Mapping[str, str]) -> None:
        from pyiceberg.exceptions import TableAlreadyExistsError

        database, name = split_key(table.key)
        metadata = json.loads(first_metadata(table, table.location or "", set).model_dump_json())
        request = {"name": name, "schema": metadata["schemas"][0], "partition-spec": metadata["partition-specs"][0],
                   "write-order": next(o for o in metadata["sort-orders"]
                                       if o["order-id"] == metadata["default-sort-order-id"]),
                   "properties": {**metadata["properties"], FORMAT_VERSION: str(metadata["format-version"])},
                   **({"location": table.location} if table.location else {}), "stage-create": False}
        try:
            self.connection.call("POST", TABLES, {409: TableAlreadyExistsError}, request, namespace=database)
        except TableAlreadyExistsError:
            raise ConcurrentChange(table.key, None, "a table created by another writer", "catalog entry") from None

    def _commit(self, key: str, table: Table | None, sources: Mapping[str, str], requires: IcebergState | None,
                set: Mapping[str, str], unset: Sequence[str], expected: str | None,
                loaded: dict[str, Any] | None = None) -> None:
        loaded = loaded or self._load(key)
        base, location = loaded["metadata"], str(loaded.get("metadata-location"))
        found, _ = table_from(*split_key(key), base, location)
        if found.unreadable is not None or found.iceberg is None:
            raise SchemaflowError(f"{key}: {found.unreadable}; nothing was committed")
        check_state(found, requires, expected)
        layout = layout_updates(base, table, sources) if table is not None else []
        properties, removals, upgrade = property_changes(base, table, set, unset)
        after = evolved(base, location, layout, properties, removals, upgrade, key)  # checks them, fills the digests
        updates = ([{"action": "upgrade-format-version", "format-version": upgrade}] if upgrade else []) + _rest_form(layout)
        updates.append({"action": "set-properties", "updates": {k: after.properties[k] for k in properties}})
        if removals:
            updates.append({"action": "remove-properties", "removals": list(removals)})
        requirements = [
            {"type": "assert-table-uuid", "uuid": base["table-uuid"]},
            {"type": "assert-current-schema-id", "current-schema-id": found.iceberg.schema_id},
            {"type": "assert-default-spec-id", "default-spec-id": found.iceberg.spec_id},
            {"type": "assert-default-sort-order-id", "default-sort-order-id": found.iceberg.sort_order_id},
            {"type": "assert-last-assigned-field-id", "last-assigned-field-id": int(base["last-column-id"])},
            {"type": "assert-last-assigned-partition-id",
             "last-assigned-partition-id": int(base.get("last-partition-id", 999))},
        ]
        self._send(key, TABLE, "table", requirements, updates, set, location)

    def _send(self, key: str, endpoint: str, kind: str, requirements: list[dict[str, Any]],
              updates: list[dict[str, Any]], set: Mapping[str, str], location: str) -> None:
        """Commit ``updates`` under ``requirements``: 409 is ``ConcurrentChange``; an unknown outcome is read back."""
        from pyiceberg.exceptions import (CommitFailedException, CommitStateUnknownException, RESTError, ServerError,
                                          ServiceUnavailableError)
        from requests import RequestException

        database, name = split_key(key)
        try:
            self.connection.call("POST", endpoint, {409: CommitFailedException},
                                 {"identifier": {"namespace": [database], "name": name},
                                  "requirements": requirements, "updates": updates},
                                 namespace=database, **{kind: name})
        except CommitFailedException:
            raise ConcurrentChange(key, "the state this commit was made on", "a commit of another writer",
                                   "Iceberg metadata") from None
        except (CommitStateUnknownException, ServerError, ServiceUnavailableError, RequestException) as error:
            if not _landed(self._read_back(key, kind), set, location):
                raise Unreachable(f"{NOUN} did not confirm the commit to {key} ({answer(error)}), and it did not "
                                  "land: nothing was applied; plan again") from None
        except RESTError as error:
            raise SchemaflowError(f"{NOUN} refused the commit to {key}: {answer(error)}; nothing was applied") from None

    def _read_back(self, key: str, kind: str) -> Mapping[str, Any]:
        for attempt in range(3):
            try:
                return self._load(key, kind)
            except Unreachable:
                if attempt == 2:
                    raise
                time.sleep(1.0 * 2 ** attempt)
        raise AssertionError("unreachable")

    def _load(self, key: str, kind: str = "table") -> dict[str, Any]:
        """The catalog's answer to loading the table (or ``kind`` "view") ``key``."""
        from pyiceberg.exceptions import NoSuchTableError, NoSuchViewError, RESTError
        from requests import RequestException

        database, name = split_key(key)
        missing: type[Exception] = NoSuchTableError if kind == "table" else NoSuchViewError
        try:
            return self.connection.call("GET", TABLE if kind == "table" else VIEW, {404: missing}, namespace=database,
                                        **{kind: name})
        except missing:
            raise _Missing(f"the {kind} {key} is not in {NOUN}: plan again; nothing was changed") from None
        except (RESTError, RequestException) as error:
            raise Unreachable(f"cannot read {key} from {NOUN}: {answer(error)}") from None

    def _loaded_table(self, key: str, expected: str | None) -> dict[str, Any]:
        loaded = self._load(key)
        stamp = (loaded["metadata"].get("properties") or {}).get(VERSION_KEY)
        if expected is not None and stamp != expected:
            raise ConcurrentChange(key, expected, stamp)
        return loaded

    # Views.

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        """Create (or with ``replace``, replace the view stamped ``claim``) ``view``, stamped ``claim``."""
        from pyiceberg.exceptions import ViewAlreadyExistsError

        database, name = split_key(view.key)
        properties = {**view.properties, **({COMMENT_KEY: view.comment} if view.comment else {}), VERSION_KEY: claim}
        version = {"version-id": 1, "schema-id": 0, "timestamp-ms": int(time.time() * 1000),
                   "summary": {"engine-name": ENGINE, CLAIM_SUMMARY: claim},
                   "representations": [{"type": "sql", "sql": view.sql, "dialect": SPARK_DIALECT}],
                   "default-namespace": [database]}
        if replace:
            def replaced(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
                schema = _view_schema(view, max(int(s.get("schema-id", 0)) for s in metadata["schemas"]) + 1)
                same = next((s["schema-id"] for s in metadata["schemas"] if _fields(s) == _fields(schema)), None)
                number = max(int(v["version-id"]) for v in metadata["versions"]) + 1
                added = [{"action": "add-schema", "schema": schema}] if same is None else []
                return [*added, {"action": "add-view-version", "view-version": version | {
                            "version-id": number, "schema-id": -1 if same is None else same}},
                        {"action": "set-current-view-version", "view-version-id": -1}]
            unset = [COMMENT_KEY] if not view.comment else []
            self._commit_view(view.key, replaced, properties, unset, claim, claim=claim)
            return
        request = {"name": name, "schema": _view_schema(view, 0), "view-version": version, "properties": properties}
        try:
            self.connection.call("POST", VIEWS, {409: ViewAlreadyExistsError}, request, namespace=database)
        except ViewAlreadyExistsError:
            raise ConcurrentChange(view.key, None, "a view created by another writer", "catalog entry") from None

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        """Drop the view ``key`` (stamped ``expected``) from the catalog."""
        from pyiceberg.exceptions import NoSuchViewError

        database, name = split_key(key)
        stamp = (self._load(key, "view")["metadata"].get("properties") or {}).get(VERSION_KEY)
        if expected is not None and stamp != expected:
            raise ConcurrentChange(key, expected, stamp)
        try:
            self.connection.call("DELETE", VIEW, {404: NoSuchViewError}, namespace=database, view=name)
        except NoSuchViewError:
            raise ConcurrentChange(key, expected, None) from None

    def _commit_view(self, key: str, changes: Callable[[Mapping[str, Any]], list[dict[str, Any]]],
                     set: Mapping[str, str], unset: Sequence[str], expected: str | None, claim: str | None) -> None:
        loaded = self._load(key, "view")
        metadata = loaded["metadata"]
        have = texts(metadata.get("properties") or {})
        if expected is not None and have.get(VERSION_KEY) != expected:
            raise ConcurrentChange(key, expected, have.get(VERSION_KEY))
        definition = changes(metadata)
        if definition and LIVE_STATE in set.values():  # a new version's digest is only known once it is read back
            _cannot("record a view's state digest in the commit that changes its definition")
        database, name = split_key(key)
        after = {**metadata, "properties": {k: v for k, v in have.items() if k not in unset} | dict(set)}
        set = fill_live_state(set, lambda: view_of(database, name, after))
        updates = definition + [{"action": "set-properties", "updates": dict(set)}]
        if removals := [k for k in unset if k in have]:
            updates.append({"action": "remove-properties", "removals": removals})
        self._send(key, VIEW, "view", [{"type": "assert-view-uuid", "uuid": metadata["view-uuid"]}], updates, set,
                   str(loaded.get("metadata-location")))

    def _is_view(self, key: str) -> bool:
        return bool(self.connection.catalog.view_exists(split_key(key)))

    # What the catalog cannot do: validate refuses projects that need it.

    def create_table(self, table: Table, claim: str) -> None:
        _cannot(f"create {table.key} as a {table.format} table (it holds Iceberg tables only: declare format: iceberg)")

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        _cannot("add columns outside an Iceberg commit")

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        _cannot("set a table's comment outside an Iceberg commit")

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        _cannot("set column comments outside an Iceberg commit")

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool, parameters: Mapping[str, str] = {},
                    expected: str | None = None) -> None:
        _cannot("replace a Hive table's column list")

    def set_storage(self, key: str, serde_properties: Mapping[str, str], buckets: int | None,
                    expected: str | None = None) -> None:
        _cannot("change a Hive table's storage")

    def partition_view(self, key: str, columns: Sequence[str], expected: str | None = None) -> None:
        _cannot("partition a view")

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues], kept: Any = None) -> None:
        _cannot("partition a view")

    def keep_view_partitions(self, key: str) -> Any:
        _cannot("partition a view")

    def check_views(self, views: Mapping[str, ViewSql | None]) -> None:
        """Raise unless each of ``views`` holds the SQL it held when planned: read from the catalog, as no engine
        analyses it here (None: it could not be read then, and is not compared)."""
        held = RestReader(self.connection).views([key for key, sql in views.items() if sql is not None])
        for key, view in sorted(held.items()):
            planned = views[key]
            if view is None or planned is None or view.sql != planned.sql:
                raise SchemaflowError(f"{one_line(key)} is not the view it was when planned: nothing of the step ran. "
                                      "Plan again, and read what the plan says of it now")

    def rewrite_table(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str, backup: str,
                      expected: str | None, version: str | None, claim: str, registrable: bool = False,
                      records: Mapping[str, str] = {}) -> None:
        _cannot("rewrite a table (its renames are not guarded)")

    def restore_table(self, key: str, backup: str, temporary: str, backup_version: str | None, expected: str | None,
                      version: str | None, claim: str) -> None:
        _cannot("restore a table from a backup (its renames are not guarded)")

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        """Nothing to do: no engine caches what the catalog holds."""
        return []

    def beside(self) -> AbstractContextManager[CatalogWriter | None]:
        return nullcontext(None)


class _Missing(SchemaflowError):
    """The table or view a write loads is not in the catalog."""


def _cannot(what: str) -> NoReturn:
    raise SchemaflowError(f"{NOUN} cannot {what}: keep such objects in a Hive metastore or Glue")


def _rest_form(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``updates`` as a REST catalog takes them: a sort order added then made the default is named "the last added"
    (-1), since the catalog numbers what it adds itself."""
    added = {u["sort-order"]["order-id"] for u in updates if u["action"] == "add-sort-order"}
    return [u | {"sort-order-id": -1} if u["action"] == "set-default-sort-order" and u["sort-order-id"] in added
            else u for u in updates]


def _view_schema(view: View, schema_id: int) -> dict[str, Any]:
    """The schema a view's version names: its declared column names (else the SQL's own), with their comments; a
    column whose type the declaration leaves to the SQL is written as ``string``, since no engine analyses it here."""
    names = [c.name for c in view.columns] or list(view.output)
    comments = {c.name: c.comment for c in view.columns}
    types = {c.name: c.type for c in view.columns}
    ids = iter(range(1, 1 << 30))
    fields = [{"id": next(ids), "name": n, "required": False, "type": iceberg_type(types.get(n) or "string", ids)}
              | ({"doc": comments[n]} if comments.get(n) else {}) for n in names]
    return {"type": "struct", "schema-id": schema_id, "fields": fields}


def _fields(schema: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """A schema's fields as a catalog compares them: name, type and comment, in order."""
    return [(f["name"], json.dumps(f["type"], sort_keys=True), f.get("doc")) for f in schema["fields"]]


def _landed(loaded: Mapping[str, Any], set: Mapping[str, str], location: str) -> bool:
    """Whether a commit that set ``set`` on the state at ``location`` is what the catalog holds now."""
    properties = (loaded.get("metadata") or {}).get("properties") or {}
    stamp = set.get(VERSION_KEY)
    return loaded.get("metadata-location") != location and stamp is not None and properties.get(VERSION_KEY) == stamp
