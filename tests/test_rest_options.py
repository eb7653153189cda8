"""The Iceberg REST catalog backend without a server: what a project may say about the catalog (an allow-list of
options, no credentials), credentials from the environment, and what the writer refuses before connecting."""
from __future__ import annotations

import pytest

from schemaflow.catalog.rest.connection import (CREDENTIAL_VARIABLE, TOKEN_VARIABLE, Connection, credentials,
                                                rest_settings)
from schemaflow.catalog.rest.writer import RestWriter
from schemaflow.errors import SchemaflowError
from schemaflow.model import Column, Table


def test_the_allowed_options_pass_as_text_and_name_the_endpoint() -> None:
    settings = rest_settings({"uri": "https://catalog.example.com/api/catalog/", "warehouse": "lake",
                              "options": {"prefix": "p1", "scope": "PRINCIPAL_ROLE:ALL", "rest.sigv4-enabled": True,
                                          "rest.signing-region": "eu-west-1", "header.X-Iceberg-Access-Delegation":
                                          "vended-credentials", "oauth2-server-uri": "https://idp.example.com/token"}})
    assert settings.endpoint == "rest:https://catalog.example.com/api/catalog#lake"
    assert settings.options == {"prefix": "p1", "scope": "PRINCIPAL_ROLE:ALL", "rest.sigv4-enabled": "true",
                                "rest.signing-region": "eu-west-1",
                                "header.X-Iceberg-Access-Delegation": "vended-credentials",
                                "oauth2-server-uri": "https://idp.example.com/token"}


@pytest.mark.parametrize(("options", "message"), [
    ({"py-io-impl": "evil.FileIO"}, r"'py-io-impl' is not an option schemaflow passes to the catalog"),
    ({"auth": {"type": "custom", "impl": "evil.Auth"}}, r"'auth' is not an option"),
    ({"token": "secret"}, r"'token' is not an option .*SCHEMAFLOW_REST_TOKEN"),
    ({"credential": "id:secret"}, r"'credential' is not an option"),
    ({"header.Authorization": "Bearer secret"}, r"the header Authorization carries credentials.*SCHEMAFLOW_REST_TOKEN"),
    ({"header.X Bad": "1"}, r"not a header schemaflow sends"),
    ({"header.X-Team": "a\r\nInjected: yes"}, r"options.header.X-Team: write the value as printable text on one line"),
])
def test_options_outside_the_allow_list_are_refused_saying_which(options: dict[str, object], message: str) -> None:
    with pytest.raises(SchemaflowError, match=message):
        rest_settings({"uri": "https://catalog.example.com", "options": options})


@pytest.mark.parametrize("uri", [None, "thrift://metastore:9083", "file:///etc/passwd", "https://host/\npath"])
def test_a_catalog_is_named_by_its_http_address(uri: str | None) -> None:
    with pytest.raises(SchemaflowError, match=r"metastore.uri: an Iceberg REST catalog is named by its http"):
        rest_settings({"uri": uri})


def test_credentials_come_from_the_environment_only() -> None:
    assert credentials({}) == {}
    assert credentials({TOKEN_VARIABLE: "t0k"}) == {"token": "t0k"}
    assert credentials({CREDENTIAL_VARIABLE: "id:secret"}) == {"credential": "id:secret"}
    with pytest.raises(SchemaflowError, match="both SCHEMAFLOW_REST_TOKEN and SCHEMAFLOW_REST_CREDENTIAL are set"):
        credentials({TOKEN_VARIABLE: "t", CREDENTIAL_VARIABLE: "id:secret"})
    with pytest.raises(SchemaflowError, match="write client_id:client_secret"):
        credentials({CREDENTIAL_VARIABLE: "only-a-secret"})


def test_what_the_catalog_cannot_do_is_refused_before_anything_is_connected() -> None:
    connection = Connection(rest_settings({"uri": "http://127.0.0.1:9"}), {TOKEN_VARIABLE: "t"})
    writer = RestWriter(connection)
    hive = Table("db", "t", (Column("a", "int"),), format="orc")
    with pytest.raises(SchemaflowError, match="cannot create db.t as a orc table .*declare format: iceberg"):
        writer.create_table(hive, "claim")
    with pytest.raises(SchemaflowError, match="the Iceberg REST catalog cannot partition a view"):
        writer.partition_view("db.v", ["a"])
    with pytest.raises(SchemaflowError, match="cannot restore a table from a backup"):
        writer.restore_table("db.t", "db.b", "db.tmp", None, None, None, "claim")
    with pytest.raises(SchemaflowError, match="cannot convert a Parquet table to Iceberg"):
        writer.commit_iceberg(hive, {}, None, True, {}, [], backup="db.t_backup")
    assert writer.after_apply(["db.t"]) == []
    assert connection._catalog is None  # nothing was connected
