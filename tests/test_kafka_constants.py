"""records/kafka_constants.py: the enum names the image's tables are printed with, asked of Kafka's own jars
(kafka-clients 4.4.0): ``ConfigResource.Type``, ``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``, ``ScramMechanism``, ``KafkaPrincipal.USER_TYPE`` and ``ClientQuotaEntity``'s types."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from records.kafka_constants import (
    ACL_OPERATIONS,
    ACL_PERMISSION_TYPES,
    ACL_RESOURCE_TYPES,
    CLIENT_QUOTA_CLIENT_ID,
    CLIENT_QUOTA_IP,
    CLIENT_QUOTA_USER,
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    CONFIG_RESOURCE_TYPES,
    PATTERN_TYPES,
    SCRAM_MECHANISMS,
    UNKNOWN,
    USER_PRINCIPAL_TYPE,
)
from tests.referee import RefereeUnavailable, kafka_classpath

# Prints "<enum> <code> <name>" for every constant of each enum, then the two string constants.
SOURCE = """
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.security.auth.KafkaPrincipal;

public class KafkaEnums {
    public static void main(String[] args) {
        for (ConfigResource.Type t : ConfigResource.Type.values()) System.out.println("config " + t.id() + " " + t);
        for (ResourceType t : ResourceType.values()) System.out.println("resource " + t.code() + " " + t);
        for (PatternType t : PatternType.values()) System.out.println("pattern " + t.code() + " " + t);
        for (AclOperation t : AclOperation.values()) System.out.println("operation " + t.code() + " " + t);
        for (AclPermissionType t : AclPermissionType.values()) System.out.println("permission " + t.code() + " " + t);
        for (ScramMechanism t : ScramMechanism.values())
            System.out.println("scram " + t.type() + " "
                + (t == ScramMechanism.UNKNOWN ? "UNKNOWN" : t.mechanismName()));
        System.out.println("principal 0 " + KafkaPrincipal.USER_TYPE);
        System.out.println("quota 0 " + ClientQuotaEntity.USER + "," + ClientQuotaEntity.CLIENT_ID + ","
            + ClientQuotaEntity.IP);
    }
}
"""


@pytest.fixture(scope="module")
def kafka_enums(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, str]]:
    try:
        jars = kafka_classpath("4.4.0")
    except RefereeUnavailable as reason:
        pytest.skip(str(reason))
    if shutil.which("java") is None:
        pytest.skip("java not found")
    source = Path(tmp_path_factory.mktemp("kafka-enums")) / "KafkaEnums.java"
    source.write_text(SOURCE)
    result = subprocess.run(["java", "-cp", jars.classpath, str(source)], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    enums: dict[str, dict[int, str]] = {}
    for line in result.stdout.splitlines():
        kind, code, name = line.split(" ", 2)
        enums.setdefault(kind, {})[int(code)] = name
    return enums


def _known(names: dict[int, str]) -> dict[int, str]:
    """Kafka's constants but UNKNOWN, which ours leave to the lookup's default."""
    return {code: name for code, name in names.items() if name != UNKNOWN}


def test_enum_names_are_kafkas(kafka_enums: dict[str, dict[int, str]]) -> None:
    assert _known(kafka_enums["config"]) == CONFIG_RESOURCE_TYPES
    assert (CONFIG_RESOURCE_TYPES[CONFIG_RESOURCE_TOPIC], CONFIG_RESOURCE_TYPES[CONFIG_RESOURCE_BROKER]) == (
        "TOPIC", "BROKER")
    assert _known(kafka_enums["resource"]) == ACL_RESOURCE_TYPES
    assert _known(kafka_enums["pattern"]) == PATTERN_TYPES
    assert _known(kafka_enums["operation"]) == ACL_OPERATIONS
    assert _known(kafka_enums["permission"]) == ACL_PERMISSION_TYPES
    assert _known(kafka_enums["scram"]) == SCRAM_MECHANISMS
    assert kafka_enums["principal"][0] == USER_PRINCIPAL_TYPE
    assert kafka_enums["quota"][0] == f"{CLIENT_QUOTA_USER},{CLIENT_QUOTA_CLIENT_ID},{CLIENT_QUOTA_IP}"
