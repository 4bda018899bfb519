"""Kafka as the referee: Kafka's own metadata fold (``KafkaFold.java``, compiled here against Kafka's jars) and
our reference fold, as images in one JSON shape, compared field by field.

Kafka publishes a metadata image only after whole record batches (``MetadataBatchLoader``), and, when a
metadata transaction begins mid-batch, just before its ``BeginTransactionRecord``. Our reference fold has an
image after every record (``replay.reference.fold.image_at``). So the two are compared at every offset Kafka
publishes: after every batch, the only states a broker ever saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakehouse.jars import Jars, JarSet, installed, kafka_jars, missing_reason
from records.kafka_constants import ZK_MIGRATION_STATE_FEATURE
from records.model import LogEntry, MetadataRecord
from records.vocabulary import kafka_name
from replay.query.state import BROKER_FIELDS, PARTITION_FIELDS, kafka_fields
from replay.reference.fold import Image, fold
from replay.reference.image_parts_delta import QuotaEntity
from replay.reference.rows import (
    acl_values,
    broker_values,
    controller_values,
    delegation_token_values,
    feature_level,
    partition_values,
)
from simulator import ScenarioOptions

SOURCE = Path(__file__).with_name("KafkaFold.java")
# The controllers in Kafka's camelCase (``state --format json`` has brokers, topics and partitions: replay.query.state).
CONTROLLER_FIELDS = kafka_fields("controller_id", "incarnation_id", "zk_migration_ready", "endpoints", "features")
# Kafka 3.9's FeaturesImage says metadata.version 3.0-IV1 (level 1, MINIMUM_KRAFT_VERSION) for a log that never
# set it; 4.x says nothing (Optional.empty). Our image, like 4.x, holds only what a FeatureLevelRecord said.
DEFAULT_METADATA_VERSION_39 = 1


class RefereeUnavailable(Exception):
    """No Kafka jars, java or javac here: the tests skip with this reason."""


def fetched(jar_set: JarSet) -> Jars:
    """A jar set from the cache ``python -m lakehouse.jars fetch <set>`` fills (else RefereeUnavailable, saying
    how to get it)."""
    jars = installed(jar_set=jar_set)
    if jars is None:
        raise RefereeUnavailable(missing_reason(jar_set=jar_set))
    return jars


def kafka_classpath(version: str) -> Jars:
    """Kafka's jars (``kafka-<version>``)."""
    return fetched(kafka_jars(version))


def scenario_options(mv: str, seed: int, **sizes: Any) -> ScenarioOptions:
    """A small simulated cluster at metadata.version ``mv`` for Kafka to judge: ELR from 4.0, unclean elections
    allowed on even seeds, batches of up to 25 records; ``sizes`` override the cluster's size."""
    base: dict[str, Any] = {"brokers": 6, "topics": 3, "partitions_per_topic": 6, "replication_factor": 3,
                            "events": 150, "seed": seed, "metadata_version": mv, "unclean": seed % 2 == 0,
                            "elr": mv == "4.0", "max_records_per_batch": 25}
    return ScenarioOptions(**{**base, **sizes})


def compiled(version: str, source: Path = SOURCE) -> Path:
    """The directory holding ``KafkaFold.class`` (or the class of another one-file ``source`` here) built against
    Kafka ``version``: compiled once per source and version into the cache beside the jars, by ``javac`` (no
    build tool: one file, Kafka's jars on the path)."""
    jars = kafka_classpath(version)
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise RefereeUnavailable(f"{tool} not found (a JDK 17+ compiles tests/referee/{source.name})")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    prefix = "kafka" if source == SOURCE else source.stem
    target = jars.directory.parent / "referee" / f"{prefix}-{version}-{digest}"
    if (target / f"{source.stem}.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        result = subprocess.run(["javac", "-nowarn", "-cp", jars.classpath, "-d", work, str(source)],
                                capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise AssertionError(f"{source.name} does not compile against Kafka {version}:\n{result.stderr}")
        try:
            os.rename(work, target)  # atomic: a concurrent run finds a complete directory or none
        except OSError:
            if not (target / f"{source.stem}.class").is_file():
                raise
    return target


@dataclass
class KafkaRun:
    """What Kafka's fold printed: at every offset it published, the features and the entities that changed
    (``KafkaFold.printImage``); the faults; the counts."""

    changes: dict[int, dict[str, Any]] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] = field(default_factory=dict)

    def images(self) -> Iterator[tuple[int, dict[str, dict[Any, dict[str, Any]]]]]:
        """Kafka's image at every offset it published, entity by entity (section -> key -> entity), built up from
        the changes; the same dict, updated in place, each time."""
        image: dict[str, dict[Any, dict[str, Any]]] = {section: {} for section in KEYS}
        for offset in sorted(self.changes):
            change = self.changes[offset]
            for section, key_fields in KEYS.items():
                for item in change[section]:
                    image[section][tuple(hashable(item[k]) for k in key_fields)] = item
                for gone in change["gone"][section]:
                    image[section].pop(hashable(gone) if isinstance(gone, list) else (gone,), None)
            yield offset, image


def kafka_fold(version: str, log_dir: Path, offsets: Iterable[int] | None = None, catch_up: bool = False) -> KafkaRun:
    """Run Kafka ``version``'s fold over ``log_dir`` (a ``__cluster_metadata-0`` directory): an image after every
    batch, or with ``catch_up`` the log after the snapshot in one delta, as a restarted broker loads it."""
    classes = compiled(version)
    cp = os.pathsep.join([str(classes), kafka_classpath(version).classpath])
    args = ["java", "-cp", cp, "KafkaFold", str(log_dir)]
    if offsets is not None:
        args.append(",".join(str(o) for o in sorted(set(offsets))))
    if catch_up:
        args.append("--catch-up")
    result = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
    if result.returncode != 0:
        raise AssertionError(f"Kafka {version}'s fold of {log_dir} failed:\n{result.stderr[-3000:]}")
    run = KafkaRun()
    for line in result.stdout.splitlines():
        item = json.loads(line)
        if "fault" in item:
            run.faults.append(item)
        elif "end" in item:
            run.end = item
        else:
            run.changes[item.pop("offset")] = item
    assert run.end, f"Kafka {version}'s fold of {log_dir} printed no end line"
    return run


def _camel(values: dict[str, Any], fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    out = {}
    for snake, camel in fields:
        value = values[snake]
        if snake in ("endpoints", "features"):  # Kafka keeps listeners and features in maps: by name
            value = sorted(({kafka_name(k): v for k, v in item.items()} for item in value),
                           key=lambda item: item["name"])
        out[camel] = value
    return out


# The key of each entity in both images, and how our image gives the entity in Kafka's shape.
KEYS: dict[str, tuple[str, ...]] = {"brokers": ("brokerId",), "controllers": ("controllerId",),
                                    "topics": ("topicId",), "partitions": ("topicId", "partitionId"),
                                    "configs": ("resourceType", "resourceName", "name"),
                                    "clientQuotas": ("entity", "key"), "acls": ("id",),
                                    "scramCredentials": ("name", "mechanism"), "delegationTokens": ("tokenId",),
                                    "producerIds": ()}


def hashable(value: Any) -> Any:
    """A JSON value as a dict key: lists as tuples, objects as their sorted items."""
    if isinstance(value, list):
        return tuple(hashable(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((name, hashable(item)) for name, item in value.items()))
    return value


def entity_key(item: dict[str, Any], key_fields: tuple[str, ...]) -> Any:
    """An entity's key as ``compare`` keys both images: its one key field, or the tuple of them."""
    return hashable(item[key_fields[0]]) if len(key_fields) == 1 else tuple(hashable(item[k]) for k in key_fields)


def quota_key(entity: QuotaEntity, key: str) -> Any:
    """Our client quota's key in the form ``entity_key`` gives Kafka's."""
    return hashable([{"entityType": entity_type, "entityName": name} for entity_type, name in entity]), key


def _part_json(image: Image, section: str, key: Any) -> dict[str, Any] | None:
    """An entity of the image's other parts (``replay.reference.image_parts_delta``) in KafkaFold's shape."""
    if section == "configs":
        config = image.configs.get(key[:2], {}).get(key[2])
        return None if config is None else {"resourceType": key[0], "resourceName": key[1], "name": key[2],
                                            "value": config.value}
    if section == "clientQuotas":
        entity = tuple((dict(part)["entityType"], dict(part)["entityName"]) for part in key[0])
        value = image.client_quotas.get(entity, {}).get(key[1])
        return None if value is None else {"entity": [{"entityType": t, "entityName": n} for t, n in entity],
                                           "key": key[1], "value": value}
    if section == "acls":
        acl = acl_values(image, key)
        return None if acl is None else {kafka_name(name): value for name, value in acl.items()}
    if section == "scramCredentials":
        credential = image.scram.get(key)
        return None if credential is None else {"name": key[0], "mechanism": key[1],
                                                "iterations": credential.iterations}
    if section == "delegationTokens":
        token = image.delegation_tokens.get(key)
        return None if token is None else {kafka_name(k): v for k, v in delegation_token_values(token).items()}
    ids = image.producer_ids
    return None if ids is None else {"nextProducerId": ids.next_producer_id}


def entity_json(image: Image, section: str, key: Any) -> dict[str, Any] | None:
    """One entity of our image in the shape KafkaFold prints (that of ``kraft-replay state --format json``)."""
    if section not in ("brokers", "controllers", "topics", "partitions"):
        return _part_json(image, section, key)
    if section == "brokers":
        broker = image.brokers.get(key)
        return None if broker is None else _camel(broker_values(broker), BROKER_FIELDS)
    if section == "controllers":
        controller = image.controllers.get(key)
        return None if controller is None else _camel(controller_values(controller), CONTROLLER_FIELDS)
    if section == "topics":
        name = image.topics.get(key)
        return None if name is None else {"topicId": key, "name": name}
    partition = image.partitions.get(key)
    return None if partition is None else _camel(partition_values(image, partition), PARTITION_FIELDS)


def kafkas_features(version: str, kafka: dict[str, int], ours: dict[str, int]) -> dict[str, int]:
    """Kafka's features less what is only a representation of the same state (DEFAULT_METADATA_VERSION_39)."""
    if (version.startswith("3.") and "metadata.version" not in ours
            and kafka.get("metadata.version") == DEFAULT_METADATA_VERSION_39):
        return {k: v for k, v in kafka.items() if k != "metadata.version"}
    return kafka


def our_features(version: str, image: Image) -> dict[str, int]:
    """Our features as Kafka ``version`` shows them (``features_as_kafka_shows``)."""
    features = dict(image.features)
    level = feature_level(image, ZK_MIGRATION_STATE_FEATURE)
    if level is not None:
        features[ZK_MIGRATION_STATE_FEATURE] = level
    return features_as_kafka_shows(version, features)


def features_as_kafka_shows(version: str, features: dict[str, int]) -> dict[str, int]:
    """Our features (the ZK migration state as the feature ``zkMigrationState``, as ``feature_history`` and
    ``state`` keep it) as Kafka ``version`` shows them: 3.x's FeaturesImage also holds the ZK migration state
    (KafkaFold prints it as "zkMigrationState" unless NONE); 4.x's has none (its MetadataDelta ignores the
    record)."""
    return dict(sorted((name, level) for name, level in features.items()
                       if version.startswith("3.") or name != ZK_MIGRATION_STATE_FEATURE))


@dataclass
class Comparison:
    """How much was compared, and what differed (offset -> problems)."""

    offsets: int = 0
    records: int = 0
    mismatches: dict[int, list[str]] = field(default_factory=dict)


def _walk(entries: list[LogEntry], offsets: list[int], visit: Callable[[int, Image, dict[str, set[Any]]], None],
          base_snapshot: tuple[int, Sequence[MetadataRecord]] | None) -> None:
    """``visit(offset, image, touched)`` at each of ``offsets`` (ascending): our live image there, and the keys
    our fold touched since the offset before, in one pass: when the fold pulls an entry it has applied every
    entry before it and nothing of it, so the image is the one at the offsets below the entry's."""
    done = 0
    image = Image()
    touched: dict[str, set[Any]] = {section: set() for section in KEYS}

    def take() -> None:
        nonlocal done, touched
        visit(offsets[done], image, touched)
        touched = {section: set() for section in KEYS}
        done += 1

    def feed() -> Iterator[LogEntry]:
        for entry in entries:
            while done < len(offsets) and offsets[done] < entry.offset:
                take()
            yield entry

    for commit in fold(feed(), base_snapshot):
        image = commit.image
        changes = commit.changes
        for section, keys in (("brokers", changes.brokers), ("controllers", changes.controllers),
                              ("topics", changes.topics), ("partitions", changes.partitions),
                              ("configs", changes.configs), ("acls", changes.acls),
                              ("scramCredentials", changes.scram), ("delegationTokens", changes.delegation_tokens)):
            touched[section].update(keys)
        touched["clientQuotas"].update(quota_key(entity, key) for entity, key in changes.client_quotas)
        if changes.producer_ids is not None:
            touched["producerIds"].add(())
    while done < len(offsets):
        take()


def compare(version: str, log_dir: Path, entries: list[LogEntry],
            base_snapshot: tuple[int, Sequence[MetadataRecord]] | None = None) -> tuple[Comparison, KafkaRun]:
    """Kafka's image and ours at every offset Kafka published for ``log_dir`` (whose records are ``entries``;
    ``base_snapshot`` the end offset and records of its latest ``.checkpoint``, if it has one).

    Both images are compared whole at the first offset; after it, every entity either side changed since the
    offset before (the rest is equal on both sides as it was) and the features."""
    run = kafka_fold(version, log_dir)
    result = Comparison(records=sum(1 for e in entries if not e.is_control))
    theirs: dict[str, dict[Any, dict[str, Any]]] = {section: {} for section in KEYS}

    def check(offset: int, image: Image, touched: dict[str, set[Any]]) -> None:
        change = run.changes[offset]
        problems = []
        ours = our_features(version, image)
        features = kafkas_features(version, change["features"], ours)
        if features != ours:
            problems.append(f"features: kafka {features} ours {ours}")
        for section, key_fields in KEYS.items():
            keys = set(touched[section])
            for item in change[section]:
                key = entity_key(item, key_fields)
                theirs[section][key] = item
                keys.add(key)
            for gone in change["gone"][section]:
                key = hashable(gone)
                theirs[section].pop(key, None)
                keys.add(key)
            for key in sorted(keys, key=repr):
                a, b = theirs[section].get(key), entity_json(image, section, key)
                if a is None and b is None:
                    continue
                if a is None or b is None:
                    problems.append(f"{section} {key}: only in {'ours' if a is None else 'kafka'}")
                elif a != b:
                    fields = [f"{name}: kafka {a[name]!r} ours {b.get(name)!r}" for name in a
                              if a[name] != b.get(name)]
                    problems.append(f"{section} {key}: {'; '.join(fields)}")
        result.offsets += 1
        if problems:
            result.mismatches[offset] = problems

    _walk(entries, sorted(run.changes), check, base_snapshot)
    return result, run
