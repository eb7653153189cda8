"""The tests' layer over moto's Glue (tests/glue_versions.py) refuses a stale ``UpdateTable`` as AWS does.

moto in this process (``mock_aws``): no AWS account, no server, no JVM.
"""
from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from tests.glue_versions import versioned_glue

REGION = "eu-west-1"


@pytest.fixture
def glue(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("glue", region_name=REGION)
        client.create_database(DatabaseInput={"Name": "retail"})
        client.create_table(DatabaseName="retail", TableInput={"Name": "orders", "Parameters": {"k": "0"}})
        yield client


def _update(client: Any, version: str | None, value: str, **more: Any) -> None:
    asked = {} if version is None else {"VersionId": version}
    client.update_table(DatabaseName="retail", TableInput={"Name": "orders", "Parameters": {"k": value}},
                        **asked, **more)


def _held(client: Any) -> tuple[str, str]:
    table = client.get_table(DatabaseName="retail", Name="orders")["Table"]
    return table["VersionId"], table["Parameters"]["k"]


def test_a_stale_version_is_refused_and_a_current_one_lands(glue: Any) -> None:
    with versioned_glue() as seen:
        first, _ = _held(glue)
        _update(glue, first, "1", SkipArchive=True)
        second, value = _held(glue)
        assert value == "1" and second != first
        with pytest.raises(glue.exceptions.ConcurrentModificationException) as refused:
            _update(glue, first, "stale")
        assert refused.value.response["Error"]["Code"] == "ConcurrentModificationException"
        assert _held(glue) == (second, "1")  # nothing stored
        _update(glue, None, "unguarded")  # AWS takes an update without a version, as moto does
        assert _held(glue)[1] == "unguarded"
        assert seen.skip_archive == [("retail", "orders", True), ("retail", "orders", False)]
        assert seen.refused == 1
    _update(glue, first, "moto alone")  # without the layer, moto takes the stale version
    assert _held(glue)[1] == "moto alone"


def test_two_writers_racing_on_one_version_one_is_refused(glue: Any) -> None:
    clients = [boto3.client("glue", region_name=REGION) for _ in range(2)]
    version, _ = _held(glue)
    start = threading.Barrier(2)
    outcomes: dict[int, str] = {}

    def write(index: int) -> None:
        start.wait()
        try:
            _update(clients[index], version, f"writer {index}")
            outcomes[index] = "landed"
        except ClientError as error:
            outcomes[index] = error.response["Error"]["Code"]

    with versioned_glue() as seen:
        threads = [threading.Thread(target=write, args=(index,)) for index in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(outcomes.values()) == ["ConcurrentModificationException", "landed"]
    winner = next(index for index, outcome in outcomes.items() if outcome == "landed")
    assert _held(glue)[1] == f"writer {winner}"
    assert seen.refused == 1
