"""Object-store lake roots: the URI forms docs/cluster.md documents reach the right pyarrow filesystem.

No object store is reachable from the test machine, so this checks only what can be checked offline: the
scheme each side needs (Spark's Hadoop connectors use s3a://, pyarrow s3://) and that a root is kept as the
URI it is (not turned into a local path).
"""

from __future__ import annotations

import pyarrow.fs as pafs

from lakehouse.lake import Lake, arrow_filesystem, resolve_lake_root


def test_s3a_roots_are_read_as_s3_by_pyarrow() -> None:
    filesystem, path = arrow_filesystem("s3a://bucket/kraft/lake?region=eu-west-1")
    assert isinstance(filesystem, pafs.S3FileSystem) and path == "bucket/kraft/lake"
    assert filesystem.region == "eu-west-1"


def test_gcs_azure_and_local_roots() -> None:
    gcs, gcs_path = arrow_filesystem("gs://bucket/lake")
    assert isinstance(gcs, pafs.GcsFileSystem) and gcs_path == "bucket/lake"
    azure, azure_path = arrow_filesystem("abfss://container@account.dfs.core.windows.net/lake")
    assert isinstance(azure, pafs.AzureFileSystem) and azure_path == "container/lake"
    local, local_path = arrow_filesystem("/var/lib/kraft-lake")
    assert isinstance(local, pafs.LocalFileSystem) and local_path == "/var/lib/kraft-lake"


def test_uri_roots_stay_uris() -> None:
    assert resolve_lake_root("s3a://bucket/kraft/lake/") == "s3a://bucket/kraft/lake"
    assert Lake("abfss://c@a.dfs.core.windows.net/lake").path("metadata_log") == (
        "abfss://c@a.dfs.core.windows.net/lake/metadata_log")
