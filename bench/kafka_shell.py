"""Kafka's metadata shell, timed: the yardstick of issue 42's first answer and increment
(``org.apache.kafka.shell.MetadataShell --snapshot SEGMENT ls /image/cluster``, ``kafka-shell`` 3.9.0 from Maven
Central; 4.x's artifact is not served there).

Kafka 3.9.0's shell waits forever on some files (KAFKA-15371, fixed in Kafka 4.1 by apache/kafka#19419): its
``SnapshotFileReader`` exposes the high-water mark only after the reader's queue shut down, and a loader that
already applied the last batch by then never publishes. That fix moves one assignment: the high-water mark is set
when the last batch is read, before it is handed to the loader. Here 3.9.0's own source of that class (its
``-sources`` jar from Maven Central) gets the same change, is compiled against 3.9.0's jars and goes first on the
classpath; everything else the shell runs is 3.9.0 as released.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from bench.clock import timed
from lakehouse.jars import KAFKA_SHELL_VERSION, JarsUnavailableError, fetch, kafka_shell_jars

READER = "org/apache/kafka/metadata/util/SnapshotFileReader.java"
# The 3.9.0 lines that read the next batch, and the same with KAFKA-15371's fix: the high-water mark known as soon
# as the last batch is read.
READ_NEXT = """        FileChannelRecordBatch batch = batchIterator.next();
"""
READ_NEXT_FIXED = """        FileChannelRecordBatch batch = batchIterator.next();
        if (!batchIterator.hasNext()) {
            highWaterMark = OptionalLong.of(batch.lastOffset());
        }
"""


class ShellUnavailableError(RuntimeError):
    """Kafka's shell cannot be fetched or built here."""


def shell_classpath(work: Path, version: str = KAFKA_SHELL_VERSION) -> str:
    """The shell's classpath: the fixed reader's classes under ``work``, then ``kafka-shell`` and its jars."""
    try:
        jars, _ = fetch(jar_set=kafka_shell_jars(version))
    except JarsUnavailableError as error:
        raise ShellUnavailableError(f"kafka-shell {version}: {error}") from error
    classes = work / f"kafka-shell-{version}-fix"
    if not (classes / READER.replace(".java", ".class")).exists():
        _compile_fixed_reader(classes, jars.classpath, version)
    return os.pathsep.join([str(classes), jars.classpath])


def _compile_fixed_reader(classes: Path, classpath: str, version: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sources = Path(scratch)
        artifact = f"org.apache.kafka:kafka-metadata:{version}:jar:sources"
        copied = subprocess.run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={artifact}",
                                 f"-DoutputDirectory={sources}"], capture_output=True, text=True, check=False)
        jar = next(sources.glob("*-sources.jar"), None)
        if copied.returncode != 0 or jar is None:
            output = copied.stdout[-500:] + copied.stderr[-500:]
            raise ShellUnavailableError(f"Maven could not fetch {artifact}: {output}")
        with zipfile.ZipFile(jar) as archive:
            source = archive.read(READER).decode()
        if READ_NEXT not in source:
            raise ShellUnavailableError(f"{artifact}'s {READER} does not read batches as 3.9.0 does")
        fixed = sources / Path(READER).name
        fixed.write_text(source.replace(READ_NEXT, READ_NEXT_FIXED))
        shutil.rmtree(classes, ignore_errors=True)
        compiled = subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath, str(fixed)],
                                  capture_output=True, text=True, check=False)
        if compiled.returncode != 0:
            raise ShellUnavailableError(f"javac of the fixed {READER} failed: {compiled.stderr[-1000:]}")


def timed_shell(classpath: str, segment: Path, *command: str, timeout: float = 120.0) -> tuple[str, float]:
    """``MetadataShell --snapshot SEGMENT COMMAND`` as a fresh JVM: (what it printed, wall seconds, JVM start
    included)."""
    args = ["java", "-cp", classpath, "org.apache.kafka.shell.MetadataShell", "--snapshot", str(segment), *command]
    done, seconds = timed(lambda: subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                                                 check=False))
    if done.returncode != 0:
        raise ShellUnavailableError(f"Kafka's shell on {segment} exited {done.returncode}: {done.stderr[-1000:]}")
    return done.stdout, seconds
