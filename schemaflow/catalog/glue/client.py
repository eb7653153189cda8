"""Reaching a Glue Data Catalog: the options a project gives, the boto3 client, the catalog's name, its errors.

``metastore.options`` names the catalog (``region``, ``catalog_id``: the AWS account whose catalog it is, by default
the caller's), where to reach it (``endpoint``: a Glue-compatible endpoint, such as a VPC endpoint or a test
server), and how writes archive (``skip_archive``: ``UpdateTable``'s ``SkipArchive``, false by default as in Glue,
so each write keeps the table's previous version). Credentials come from boto3's default chain only (environment,
shared profile, SSO, instance or task role): never from the repository, so no option takes one. The options are
an allow-list, checked before anything is connected.

Every call goes through ``GlueCatalog.call``, which names what it was doing in an error: an unreachable endpoint is
``Unreachable``; AWS's refusals (no credentials, access denied, throttled, no such database) are a
``SchemaflowError`` with AWS's code and message, quoted as data (``output_safety``), never a traceback.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterator, Mapping

from schemaflow.errors import SchemaflowError, Unreachable
from schemaflow.output_safety import one_line

INSTALL = "install schemaflow with its extra glue (pip install '<where schemaflow comes from>[glue]')"
OPTIONS = {"region": str, "catalog_id": str, "endpoint": str, "skip_archive": bool}


@dataclass(frozen=True)
class GlueOptions:
    region: str | None = None
    catalog_id: str | None = None
    endpoint: str | None = None
    skip_archive: bool = False

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> GlueOptions:
        """The options of ``metastore.options``, checked against ``OPTIONS``."""
        for name, value in options.items():
            kind = OPTIONS.get(name)
            if kind is None:
                raise SchemaflowError(f"schemaflow.yaml: metastore.options.{one_line(str(name))} is no option of the "
                                      f"glue backend; its options are {', '.join(OPTIONS)} (credentials come from "
                                      "AWS's default chain, never from the project)")
            if not isinstance(value, kind):
                raise SchemaflowError(f"schemaflow.yaml: metastore.options.{name} must be a {kind.__name__}")
        return cls(**options)


class Missing(SchemaflowError):
    """What a call asked for is not in the catalog (``EntityNotFoundException``)."""


class Taken(SchemaflowError):
    """A create found the name taken (``AlreadyExistsException``)."""


class Stale(SchemaflowError):
    """An ``UpdateTable`` named a ``VersionId`` that is no longer the table's (``ConcurrentModificationException``)."""


_KNOWN = {"EntityNotFoundException": Missing, "AlreadyExistsException": Taken,
          "ConcurrentModificationException": Stale}


@dataclass
class GlueCatalog:
    """One Glue Data Catalog through a boto3 client, made on first use."""

    options: GlueOptions
    _client: Any = field(default=None, init=False, repr=False)
    _account: str | None = field(default=None, init=False, repr=False)

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                import boto3
            except ImportError as error:
                raise SchemaflowError(f"the glue backend needs boto3, which is not installed: {INSTALL}") from error
            options = self.options
            self._client = self._made(lambda: boto3.client("glue", region_name=options.region,
                                                           endpoint_url=options.endpoint))
        return self._client

    @property
    def endpoint(self) -> str:
        """``glue:<region>:<catalog id>``: what a plan records as the catalog it was made against."""
        if self._account is None:
            self._account = self.options.catalog_id or self.call(
                "asking AWS STS which account the credentials are", lambda: self._sts().get_caller_identity())["Account"]
        return f"glue:{self.client.meta.region_name}:{self._account}"

    def _sts(self) -> Any:
        import boto3

        return self._made(lambda: boto3.client("sts", region_name=self.client.meta.region_name))

    def _made(self, make: Callable[[], Any]) -> Any:
        from botocore.exceptions import BotoCoreError

        try:
            return make()
        except BotoCoreError as error:  # no region, a malformed endpoint
            raise SchemaflowError(f"cannot open the Glue catalog: {one_line(str(error))} (set metastore.options.region "
                                  "or AWS_REGION)") from error

    @property
    def catalog(self) -> dict[str, str]:
        """The ``CatalogId`` argument of every call: the option's, or none (the caller's own catalog)."""
        return {"CatalogId": self.options.catalog_id} if self.options.catalog_id else {}

    def call(self, doing: str, request: Callable[[], Any]) -> Any:
        """``request``'s answer; its failure as ``Missing``, ``Taken``, ``Stale``, ``Unreachable`` or a
        ``SchemaflowError`` saying it happened ``doing``."""
        from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

        try:
            return request()
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            message = str(error.response.get("Error", {}).get("Message", ""))
            raise _KNOWN.get(code, SchemaflowError)(
                f"Glue refused {doing}: {one_line(code)}: {one_line(message)}") from error
        except EndpointConnectionError as error:
            raise Unreachable(f"Glue could not be reached {doing}: {one_line(str(error))}") from error
        except BotoCoreError as error:  # no credentials, a broken response
            raise SchemaflowError(f"Glue failed {doing}: {one_line(str(error))} (credentials come from AWS's default "
                                  "chain: AWS_PROFILE, AWS_ACCESS_KEY_ID, an instance role)") from error

    def pages(self, operation: str, result: str, doing: str, **arguments: Any) -> Iterator[Any]:
        """Each item of ``result`` in every page of the paginated ``operation``."""
        paginator = self.client.get_paginator(operation)
        pages = iter(paginator.paginate(**self.catalog, **arguments))
        while True:
            page = self.call(doing, lambda: next(pages, None))
            if page is None:
                return
            yield from page.get(result, [])
