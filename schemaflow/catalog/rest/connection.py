"""A connection to an Iceberg REST catalog: what a project may say about it, credentials, and the requests made.

A project's ``metastore:`` block names the catalog (``uri``, ``warehouse``) and may pass pyiceberg a few
``options``, from an allow-list: ``prefix``, ``scope``, ``oauth2-server-uri``, ``header.<name>``, ``rest.sigv4-enabled``
and ``rest.signing-region``. Nothing else: keys that load code (``py-io-impl``, a custom auth class) and credentials
never come from the repository. Credentials come from the environment only: ``SCHEMAFLOW_REST_TOKEN`` (a bearer
token) or ``SCHEMAFLOW_REST_CREDENTIAL`` (``client_id:client_secret``, exchanged for a token by OAuth2).

Tables are loaded, created and committed through the client's HTTP session (``Connection.call``), not its ``Table``
objects: those load a file IO named by what the server sends, and schemaflow reads and writes no data files here.
A 409 answer to a commit is the catalog refusing a requirement (``CommitFailedException``); a 5xx answer leaves the
commit's fate unknown (``CommitStateUnknownException``): the writer reads back, never repeats it blindly.
"""
from __future__ import annotations

import re
from urllib.parse import quote
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from schemaflow.catalog.iceberg_metadata import INSTALL
from schemaflow.errors import SchemaflowError, Unreachable
from schemaflow.output_safety import one_line, terminal_text

TOKEN_VARIABLE = "SCHEMAFLOW_REST_TOKEN"
CREDENTIAL_VARIABLE = "SCHEMAFLOW_REST_CREDENTIAL"
# The pyiceberg properties a project may set, by exact key; ``header.<name>`` adds an HTTP header to each request.
OPTIONS = frozenset({"prefix", "scope", "oauth2-server-uri", "rest.sigv4-enabled", "rest.signing-region"})
HEADER_PREFIX = "header."
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,64}")
# Headers that carry credentials: those come from the environment, never from the repository.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_VALUE = re.compile(r"[\x20-\x7e]{0,1024}")  # printable ASCII: nothing that could split a header or a line
# The REST catalog's paths (Iceberg's open-api spec), under /v1/{prefix}/.
TABLES = "namespaces/{namespace}/tables"
TABLE = "namespaces/{namespace}/tables/{table}"
REGISTER = "namespaces/{namespace}/register"
VIEWS = "namespaces/{namespace}/views"
VIEW = "namespaces/{namespace}/views/{view}"
_URI = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(?:/[A-Za-z0-9._~%/\-]*)?")


@dataclass(frozen=True)
class RestSettings:
    """Where the catalog is and how to talk to it, as a project declares it (checked: ``rest_settings``)."""

    uri: str
    warehouse: str = ""
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        """What a plan records as the catalog it was made against."""
        return f"rest:{self.uri}#{self.warehouse}"


def rest_settings(block: Mapping[str, Any], where: str = "schemaflow.yaml: metastore") -> RestSettings:
    """The ``metastore:`` block of a project on an Iceberg REST catalog, checked; ``SchemaflowError`` saying what to do
    where it is not one schemaflow uses."""
    uri = block.get("uri")
    if not isinstance(uri, str) or not _URI.fullmatch(uri):
        raise SchemaflowError(f"{where}.uri: an Iceberg REST catalog is named by its http:// or https:// address "
                              "(uri: https://catalog.example.com/api/catalog)")
    warehouse = block.get("warehouse") or ""
    if not isinstance(warehouse, str) or not _VALUE.fullmatch(warehouse):
        raise SchemaflowError(f"{where}.warehouse: write the catalog's warehouse as text (printable, one line)")
    return RestSettings(uri.rstrip("/"), warehouse, allowed_options(block.get("options") or {}, f"{where}.options"))


def allowed_options(options: Any, where: str) -> dict[str, str]:
    """``options`` if each is one a project may set (see the module), as text; else ``SchemaflowError`` naming it."""
    if not isinstance(options, Mapping):
        raise SchemaflowError(f"{where}: write the options as a mapping of name: value")
    checked = {}
    for key, value in options.items():
        key, text = str(key), str(value).lower() if isinstance(value, bool) else str(value)
        if key.startswith(HEADER_PREFIX):
            name = key[len(HEADER_PREFIX):]
            if not _HEADER_NAME.fullmatch(name):
                raise SchemaflowError(f"{where}: {key[:80]!r} is not a header schemaflow sends: name it with letters, "
                                      "digits and '-'")
            if name.lower() in _CREDENTIAL_HEADERS:
                raise SchemaflowError(f"{where}: the header {name} carries credentials, which never come from the "
                                      f"repository: set {TOKEN_VARIABLE} or {CREDENTIAL_VARIABLE} where schemaflow runs")
        elif key not in OPTIONS:
            raise SchemaflowError(f"{where}: {key[:80]!r} is not an option schemaflow passes to the catalog; the "
                                  f"options are {', '.join(sorted(OPTIONS))} and header.<name> (credentials come from "
                                  f"{TOKEN_VARIABLE} or {CREDENTIAL_VARIABLE})")
        if not _VALUE.fullmatch(text):
            raise SchemaflowError(f"{where}.{key}: write the value as printable text on one line")
        checked[key] = text
    return checked


def credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg's credential properties from the environment: a token, or a client credential (not both)."""
    token, credential = environ.get(TOKEN_VARIABLE), environ.get(CREDENTIAL_VARIABLE)
    if token and credential:
        raise SchemaflowError(f"both {TOKEN_VARIABLE} and {CREDENTIAL_VARIABLE} are set: set the one the catalog takes")
    if token:
        return {"token": token}
    if credential:
        if ":" not in credential:
            raise SchemaflowError(f"{CREDENTIAL_VARIABLE} is not a client credential: write client_id:client_secret")
        return {"credential": credential}
    return {}


class Connection:
    """pyiceberg's REST client of one catalog, made on first use, and the requests schemaflow sends through it."""

    def __init__(self, settings: RestSettings, environ: Mapping[str, str]) -> None:
        self.settings = settings
        self._properties = {**settings.options, **credentials(environ), "uri": settings.uri,
                            **({"warehouse": settings.warehouse} if settings.warehouse else {})}
        self._catalog: Any = None

    @property
    def catalog(self) -> Any:
        """pyiceberg's ``RestCatalog`` (it asks the server for its configuration when made)."""
        if self._catalog is None:
            try:
                from pyiceberg.catalog.rest import RestCatalog
            except ImportError:
                raise SchemaflowError(f"the Iceberg REST catalog is reached through pyiceberg: {INSTALL}") from None
            from pydantic import ValidationError
            from pyiceberg.exceptions import RESTError
            from requests import RequestException

            try:
                self._catalog = RestCatalog("schemaflow", **self._properties)
            except (RESTError, RequestException, ValidationError, ValueError, OSError) as error:
                raise Unreachable(f"cannot reach the Iceberg REST catalog at {self.settings.uri}: "
                                  f"{answer(error)}") from None
        return self._catalog

    def call(self, method: str, endpoint: str, errors: Mapping[int, type[Exception]], payload: Any = None,
             **path: str) -> dict[str, Any]:
        """The JSON answer of ``method`` on ``endpoint`` (one of pyiceberg's ``Endpoints``, its ``{namespace}``,
        ``{table}`` or ``{view}`` filled from ``path``); an error answer raises what pyiceberg raises for its status
        (``errors`` maps statuses to its exceptions)."""
        from pyiceberg.catalog.rest.response import _handle_non_200_response
        from requests import HTTPError

        catalog = self.catalog
        url = catalog.url(endpoint, prefixed=True, **{k: catalog._encode_namespace_path((v,)) if k == "namespace"
                                                       else quote(v, safe="") for k, v in path.items()})
        response = catalog._session.request(method, url, json=payload)
        try:
            response.raise_for_status()
        except HTTPError as error:
            _handle_non_200_response(error, dict(errors))
        return dict(response.json()) if response.content else {}


def answer(error: BaseException) -> str:
    """What a failed request said, as one line of text safe for a terminal (the server's words are not trusted)."""
    return f"{type(error).__name__}: {one_line(terminal_text(str(error)))[:300]}"
