"""kraft_replay/image_commands.py: the image's parts in `state` (JSON and tables, `--section`), `history`
(`--config`, `--acl`, `--user`, `--quota`, `--token`, `--producer-ids`), `diff` and the `changes` command, on the
lake of tests/image_lake_support.py (built once per run)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kraft_replay.image_commands import ALL_SECTIONS, change_line, parse_sections
from lakehouse.lake import Lake
from replay.query.state import QueryError, iso_ms
from tests.image_lake_support import ACL_READ, ACL_WRITE, CLUSTER, DAY_MS, FINGERPRINTS, ISSUED_MS, WEEK_MS, ImageLog

pytestmark = pytest.mark.spark


def _cli(lake: Lake, *args: str) -> Any:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    return CliRunner().invoke(app, [*args, "--lake", str(lake.root)], env={"COLUMNS": "250"})


def _ok(lake: Lake, *args: str) -> str:
    result = _cli(lake, *args)
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def test_sections_by_name() -> None:
    assert parse_sections(None) == ALL_SECTIONS
    assert parse_sections("acls,CONFIGS") == ("configs", "acls")
    with pytest.raises(QueryError, match="unknown --section quotas: the sections are brokers, topics, partitions"):
        parse_sections("quotas,acls")


def test_state_json_has_every_part(image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    doc = json.loads(_ok(image_lake, "state", "--offset", str(k["pids-1"]), "--format", "json"))
    assert list(doc) == ["clusterId", "offset", *ALL_SECTIONS]
    assert (doc["clusterId"], doc["offset"]) == (CLUSTER, k["pids-1"])
    assert [t["name"] for t in doc["topics"]] == ["orders"]
    assert doc["configs"][0] == {"resourceType": 2, "resourceName": "orders", "name": "retention.ms",
                                 "value": "86400000"}
    assert doc["clientQuotas"][1] == {"entity": [{"entityType": "user", "entityName": "alice"}],
                                      "key": "producer_byte_rate", "value": 1048576.0}
    assert [a["id"] for a in doc["acls"]] == [ACL_WRITE, ACL_READ]
    assert doc["scramCredentials"] == [{"name": "alice", "mechanism": 1, "iterations": 4096}]
    assert doc["delegationTokens"] == [
        {"tokenId": "token-1", "owner": "User:alice", "requester": "User:alice", "renewers": ["User:bob"],
         "issueTimestamp": ISSUED_MS, "maxTimestamp": ISSUED_MS + WEEK_MS, "expirationTimestamp": ISSUED_MS + DAY_MS}]
    assert doc["producerIds"] == {"nextProducerId": 1000}
    first = json.loads(_ok(image_lake, "state", "--offset", "0", "--format", "json", "--section",
                           "producerIds,acls"))
    assert first == {"clusterId": CLUSTER, "offset": 0, "acls": [], "producerIds": {"nextProducerId": -1}}
    only_brokers = json.loads(_ok(image_lake, "state", "--offset", "0", "--format", "json", "--brokers"))
    assert list(only_brokers) == ["clusterId", "offset", "brokers", "topics", "partitions"]


def test_state_tables_for_people(image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    out = _ok(image_lake, "state", "--offset", str(k["pids-1"]), "--section",
              "configs,clientQuotas,acls,scramCredentials,delegationTokens,producerIds")
    lines = out.splitlines()
    assert lines[0].startswith(f"cluster {CLUSTER} as of offset {k['pids-1']} (appended ")
    assert k["pids-1"] == 26 and lines[1:] == STATE_TABLE
    topic_only = _ok(image_lake, "state", "--offset", str(k["pids-1"]), "--topic", "orders", "--section", "configs")
    assert [line.split()[:3] for line in topic_only.splitlines()[4:]] == [["TOPIC:orders", "retention.ms",
                                                                           "86400000"]]
    # --topic without --section: the brokers, the topic's partitions and its configs, none of the other parts
    topic_json = json.loads(_ok(image_lake, "state", "--offset", str(k["pids-1"]), "--topic", "orders",
                                "--format", "json"))
    assert list(topic_json) == ["clusterId", "offset", "brokers", "topics", "partitions", "configs"]
    assert [c["name"] for c in topic_json["configs"]] == ["retention.ms"]
    wrong = _cli(image_lake, "state", "--offset", "1", "--section", "quotas")
    assert wrong.exit_code == 2 and "unknown --section quotas" in wrong.output
    both = _cli(image_lake, "state", "--offset", "1", "--section", "acls", "--brokers")
    assert both.exit_code == 2 and "--brokers or --section" in both.output


# `state --offset 26 --section configs,clientQuotas,acls,scramCredentials,delegationTokens,producerIds`, after its
# first line: every value as the log has it, Kafka's enum names, a secret's fingerprint shortened, no secret
STATE_TABLE = [
    "",
    "configs (3)",
    "RESOURCE      NAME                   VALUE       FINGERPRINT    SINCE  CAUSE",
    "TOPIC:orders  retention.ms           86400000                   17     ConfigRecord",
    "BROKER:       min.insync.replicas    2                          18     ConfigRecord",
    "BROKER:1      ssl.keystore.password  (redacted)  a1a1a1a1a1a1…  19     ConfigRecord",
    "",
    "clientQuotas (2)",
    "ENTITY          KEY                 VALUE      SINCE  CAUSE",
    "user=<default>  consumer_byte_rate  2097152.0  21     ClientQuotaRecord",
    "user=alice      producer_byte_rate  1048576.0  20     ClientQuotaRecord",
    "",
    "acls (2)",
    "PRINCIPAL   PERMISSION  OPERATION  RESOURCE        PATTERN   HOST  ID                      SINCE  CAUSE",
    "User:alice  ALLOW       WRITE      TOPIC:payments  LITERAL   *     Wh5aHloeWh5aHloeWh5aHg  22     "
    "AccessControlEntryRecord",
    "User:bob    ALLOW       READ       TOPIC:payments  PREFIXED  *     Cw4LDgsOCw4LDgsOCw4LDg  23     "
    "AccessControlEntryRecord",
    "",
    "scramCredentials (1)",
    "USER   MECHANISM      ITERATIONS  FINGERPRINT    SINCE  CAUSE",
    "alice  SCRAM-SHA-256  4096        c3c3c3c3c3c3…  24     UserScramCredentialRecord",
    "",
    "delegationTokens (1)",
    "TOKEN ID  OWNER       REQUESTER   RENEWERS  ISSUED                    MAX                       EXPIRES"
    "                   SINCE  CAUSE",
    "token-1   User:alice  User:alice  User:bob  2026-01-01T00:00:00.000Z  2026-01-08T00:00:00.000Z  "
    "2026-01-02T00:00:00.000Z  25     DelegationTokenRecord",
    "",
    "producerIds: nextProducerId 1000 (since offset 26, ProducerIdsRecord)",
]


def test_history_of_configs_acls_and_a_user(image_lake: Lake, image_log: ImageLog) -> None:
    k, time = image_log.key, image_log.time
    configs = _ok(image_lake, "history", "--config", "TOPIC:orders").splitlines()
    assert configs[0] == "configs of TOPIC:orders: 2 version(s); TO empty = still current"
    assert [line.split() for line in configs[2:]] == [
        [str(k["retention-1"]), str(k["retention-2"]), iso_ms(time[k["retention-1"]]), str(k["retention-1"]),
         "ConfigRecord", "TOPIC:orders", "retention.ms", "604800000"],
        [str(k["retention-2"]), iso_ms(time[k["retention-2"]]), str(k["retention-2"]), "ConfigRecord",
         "TOPIC:orders", "retention.ms", "86400000"]]
    default = _ok(image_lake, "history", "--config", "BROKER:", "--format", "json").splitlines()
    assert [json.loads(line) for line in default] == [
        {"part": "configs", "resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2",
         "valueFingerprint": None, "validFromOffset": k["min-isr"], "validToOffset": None,
         "validFromTimeMs": time[k["min-isr"]], "validToTimeMs": None, "causeOffset": k["min-isr"],
         "causeType": "ConfigRecord"}]
    acls = _ok(image_lake, "history", "--acl", "--principal", "User:alice").splitlines()
    assert acls[0] == "ACLs of User:alice: 1 version(s); TO empty = still current"
    assert acls[2].split()[:5] == [str(k["acl-write"]), str(k["acl-removed"]), iso_ms(time[k["acl-write"]]),
                                   str(k["acl-write"]), "AccessControlEntryRecord"]
    user = [json.loads(line) for line in _ok(image_lake, "history", "--user", "alice", "--format", "json")
            .splitlines()]
    assert [(v["part"], v["validFromOffset"]) for v in user] == [
        ("scramCredentials", k["scram-1"]), ("scramCredentials", k["scram-2"]),
        ("clientQuotas", k["quota-alice-1"]), ("clientQuotas", k["quota-alice-2"]), ("acls", k["acl-write"])]
    assert user[1]["credentialFingerprint"] == FINGERPRINTS["scram-2"] and "salt" not in user[1]
    shown = _ok(image_lake, "history", "--user", "alice")
    assert [line for line in shown.splitlines() if "version(s)" in line] == [
        "scramCredentials of user alice: 2 version(s); TO empty = still current",
        "clientQuotas of user alice: 2 version(s); TO empty = still current",
        "acls of user alice: 1 version(s); TO empty = still current"]


def test_history_of_quotas_tokens_producer_ids_and_errors(image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    assert _ok(image_lake, "history", "--quota").splitlines()[0] == (
        "clientQuotas: 3 version(s); TO empty = still current")
    token = _ok(image_lake, "history", "--token").splitlines()
    assert token[0] == "delegationTokens: 1 version(s); TO empty = still current"
    assert token[2].split()[:2] == [str(k["token"]), str(k["token-removed"])]
    pids = [json.loads(line) for line in _ok(image_lake, "history", "--producer-ids", "--format", "json")
            .splitlines()]
    assert [(p["nextProducerId"], p["validFromOffset"], p["validToOffset"]) for p in pids] == [
        (1000, k["pids-1"], k["pids-2"]), (2000, k["pids-2"], None)]
    for args, message in ((("--acl", "--quota"), "ask one thing"), ((), "ask one thing"),
                          (("--principal", "User:alice", "--quota"), "--principal and --resource narrow --acl"),
                          (("--topic", "orders"), "needs both --topic and --partition"),
                          (("--config", "QUEUE:x"), "unknown config resource type 'QUEUE'")):
        wrong = _cli(image_lake, "history", *args)
        assert wrong.exit_code == 2 and message in wrong.output, (args, wrong.output)
    partition = _ok(image_lake, "history", "--topic", "orders", "--partition", "0")
    assert partition.startswith("orders-0: 1 version(s)")


def test_diff_of_every_part(image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    rows = [json.loads(line) for line in _ok(image_lake, "diff", "--from", str(k["pids-1"]), "--to",
                                            str(k["quota-alice-removed"]), "--format", "json").splitlines()]
    assert [(r["entity"], r["key"], r["change"]) for r in rows] == [
        ("config", "BROKER:1 ssl.keystore.password", "changed"),
        ("clientQuota", "user=alice producer_byte_rate", "removed"),
        ("acl", ACL_WRITE, "removed"),
        ("scramCredential", "alice SCRAM-SHA-256", "changed"),
        ("delegationToken", "token-1", "removed"),
        ("producerIds", "nextProducerId", "changed")]
    table = _ok(image_lake, "diff", "--from", str(k["pids-1"]), "--to", str(k["quota-alice-removed"]))
    assert table.splitlines()[0] == f"6 change(s) from offset {k['pids-1']} to {k['quota-alice-removed']}"
    assert "iterations: 4096→8192" in table and "nextProducerId: 1000→2000" in table
    assert "valueFingerprint: " + FINGERPRINTS["keystore-1"][:20] in table


def test_changes_command(image_lake: Lake, image_log: ImageLog) -> None:
    k, time = image_log.key, image_log.time
    out = _ok(image_lake, "changes", "--from", str(k["retention-1"]), "--to", str(k["keystore-2"]), "--part",
              "config")
    assert out.splitlines() == [
        f"offset {k['retention-1']} {iso_ms(time[k['retention-1']])} topic orders retention.ms (none) → 604800000 "
        "(ConfigRecord)",
        f"offset {k['retention-2']} {iso_ms(time[k['retention-2']])} topic orders retention.ms 604800000 → 86400000 "
        "(ConfigRecord)",
        f"offset {k['min-isr']} {iso_ms(time[k['min-isr']])} broker (cluster default) min.insync.replicas (none) → 2 "
        "(ConfigRecord)",
        f"offset {k['keystore-1']} {iso_ms(time[k['keystore-1']])} broker 1 ssl.keystore.password (none) → "
        "(redacted) (ConfigRecord)",
        f"offset {k['keystore-2']} {iso_ms(time[k['keystore-2']])} broker 1 ssl.keystore.password (redacted) → "
        "(redacted, changed) (ConfigRecord)"]
    by_time = _ok(image_lake, "changes", "--from", iso_ms(time[k["acl-removed"]]), "--to",
                  iso_ms(time[k["scram-2"]]))
    assert by_time.splitlines() == [
        f"offset {k['acl-removed']} {iso_ms(time[k['acl-removed']])} acl {ACL_WRITE} User:alice ALLOW WRITE on "
        "TOPIC:payments (LITERAL) from host * → (none) (RemoveAccessControlEntryRecord)",
        f"offset {k['scram-2']} {iso_ms(time[k['scram-2']])} user alice SCRAM-SHA-256 iterations=4096 → "
        "iterations=8192 (redacted, changed) (UserScramCredentialRecord)"]
    as_json = [json.loads(line) for line in _ok(image_lake, "changes", "--from", str(k["pids-2"]), "--format",
                                                "json").splitlines()]
    assert as_json == [
        {"clusterId": CLUSTER, "offset": k["pids-2"], "timeMs": time[k["pids-2"]], "recordType": "ProducerIdsRecord",
         "part": "producerIds", "entity": "producer ids", "key": "nextProducerId", "change": "changed",
         "oldValue": "1000", "newValue": "2000"},
        {"clusterId": CLUSTER, "offset": k["quota-alice-removed"], "timeMs": time[k["quota-alice-removed"]],
         "recordType": "ClientQuotaRecord", "part": "clientQuota", "entity": "quota user=alice",
         "key": "producer_byte_rate", "change": "removed", "oldValue": "2097152.0", "newValue": None}]
    wrong = _cli(image_lake, "changes", "--from", "yesterday")
    assert wrong.exit_code == 2 and "cannot read 'yesterday'" in wrong.output
    helped = _cli(image_lake, "changes", "--help")
    assert "Who made a change is not in the log" in " ".join(helped.stdout.split())


def test_changes_view_in_sql(image_lake: Lake, image_log: ImageLog) -> None:
    query = "SELECT offset, old_value, new_value FROM changes WHERE part = 'producerIds' ORDER BY offset"
    rows = [json.loads(line) for line in _ok(image_lake, "sql", query, "--format", "json").splitlines()]
    assert rows == [{"offset": image_log.key["pids-1"], "old_value": None, "new_value": "1000"},
                    {"offset": image_log.key["pids-2"], "old_value": "1000", "new_value": "2000"}]


def test_change_line_without_a_record_type() -> None:
    row = {"offset": 7, "time_ms": 0, "entity": "producer ids", "key": "nextProducerId", "old_value": None,
           "new_value": "5", "record_type": None}
    assert change_line(row) == "offset 7 1970-01-01T00:00:00.000Z producer ids nextProducerId (none) → 5"
