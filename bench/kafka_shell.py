"""Kafka's metadata shell, timed: the yardstick of issue 42's first answer and increment
(``org.apache.kafka.shell.MetadataShell --snapshot SEGMENT ls /image/cluster/brokers``, ``kafka-shell`` 3.9.0 from Maven
Central; 4.x's artifact is not served there).

Kafka 3.9.0's shell, as released, cannot be timed on a whole file:
- it waits forever on some files (KAFKA-15371, fixed in Kafka 4.1 by apache/kafka#19419): its
  ``SnapshotFileReader`` exposes the high-water mark only after the reader's queue shut down, and a loader that
  already applied the last batch by then never publishes. That fix moves one assignment: the high-water mark is
  set when the last batch is read, before it is handed to the loader;
- and on the others it often answers before it has read them: ``MetadataShell.waitUntilCaughtUp`` returns as soon
  as the loader applied any offset, while the shell's own publisher is handed its first image by an event the
  loader schedules 100 ms later. Timed so, the shell printed an empty ``/image/cluster/brokers`` of a 34,343-record
  log in 0.46 s (the bench measured that yardstick until 2026-12-04); read whole, it prints the 3 brokers in
  0.48 to 0.58 s. Here the shell waits until its publisher holds the image at the reader's high-water mark.
Both changes are made to 3.9.0's own sources (their ``-sources`` jars from Maven Central), compiled against 3.9.0's
jars, first on the classpath; everything else the shell runs is 3.9.0 as released.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.clock import timed
from lakehouse.jars import KAFKA_SHELL_VERSION, JarsUnavailableError, fetch, kafka_shell_jars

READER = "org/apache/kafka/metadata/util/SnapshotFileReader.java"
PUBLISHER = "org/apache/kafka/shell/state/MetadataShellPublisher.java"
SHELL = "org/apache/kafka/shell/MetadataShell.java"


@dataclass(frozen=True)
class SourceFix:
    """One change to one class of a Kafka artifact's ``-sources`` jar: ``released`` becomes ``fixed``."""

    artifact: str  # the Kafka artifact holding the class, without group and version
    path: str
    released: str
    fixed: str


FIXES = (
    # KAFKA-15371: the high-water mark known as soon as the last batch is read.
    SourceFix("kafka-metadata", READER, """        FileChannelRecordBatch batch = batchIterator.next();
""", """        FileChannelRecordBatch batch = batchIterator.next();
        if (!batchIterator.hasNext()) {
            highWaterMark = OptionalLong.of(batch.lastOffset());
        }
"""),
    # The publisher says the offset of the last image it was handed ...
    SourceFix("kafka-shell", PUBLISHER, """        state.setRoot(new RootShellNode(newImage));
""", """        state.setRoot(new RootShellNode(newImage));
        publishedOffset = newImage.highestOffsetAndEpoch().offset();
    }

    private volatile long publishedOffset = -1L;

    public long publishedOffset() {
        return publishedOffset;
"""),
    # ... and the shell answers once that is the reader's high-water mark.
    SourceFix("kafka-shell", SHELL, """            if (loader.lastAppliedOffset() > 0) {
""", """            java.util.OptionalLong highWaterMark = snapshotFileReader == null
                ? java.util.OptionalLong.empty() : snapshotFileReader.highWaterMark();
            if (highWaterMark.isPresent() && publisher.publishedOffset() >= highWaterMark.getAsLong()) {
"""),
)


class ShellUnavailableError(RuntimeError):
    """Kafka's shell cannot be fetched or built here."""


def shell_classpath(work: Path, version: str = KAFKA_SHELL_VERSION) -> str:
    """The shell's classpath: the fixed classes under ``work``, then ``kafka-shell`` and its jars."""
    try:
        jars, _ = fetch(jar_set=kafka_shell_jars(version))
    except JarsUnavailableError as error:
        raise ShellUnavailableError(f"kafka-shell {version}: {error}") from error
    classes = work / f"kafka-shell-{version}-fixes"
    if not all((classes / fix.path.replace(".java", ".class")).exists() for fix in FIXES):
        _compile_fixes(classes, jars.classpath, version)
    return os.pathsep.join([str(classes), jars.classpath])


def _compile_fixes(classes: Path, classpath: str, version: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sources = Path(scratch)
        fixed_files = [str(_fixed_source(sources, fix, version)) for fix in FIXES]
        shutil.rmtree(classes, ignore_errors=True)
        compiled = subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath, *fixed_files],
                                  capture_output=True, text=True, check=False)
        if compiled.returncode != 0:
            raise ShellUnavailableError(f"javac of the fixed shell classes failed: {compiled.stderr[-1000:]}")


def _fixed_source(sources: Path, fix: SourceFix, version: str) -> Path:
    """``fix.path`` of ``fix.artifact``'s ``-sources`` jar (fetched by Maven), with the fix made."""
    artifact = f"org.apache.kafka:{fix.artifact}:{version}:jar:sources"
    jar = sources / f"{fix.artifact}-{version}-sources.jar"
    if not jar.exists():
        copied = subprocess.run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={artifact}",
                                 f"-DoutputDirectory={sources}"], capture_output=True, text=True, check=False)
        if copied.returncode != 0 or not jar.exists():
            output = copied.stdout[-500:] + copied.stderr[-500:]
            raise ShellUnavailableError(f"Maven could not fetch {artifact}: {output}")
    with zipfile.ZipFile(jar) as archive:
        source = archive.read(fix.path).decode()
    if source.count(fix.released) != 1:
        raise ShellUnavailableError(f"{artifact}'s {fix.path} is not as {version} released it: the fix does not apply")
    fixed = sources / Path(fix.path).name
    fixed.write_text(source.replace(fix.released, fix.fixed))
    return fixed


def timed_shell(classpath: str, segment: Path, *command: str, timeout: float = 120.0) -> tuple[str, float]:
    """``MetadataShell --snapshot SEGMENT COMMAND`` as a fresh JVM: (what it printed, wall seconds, JVM start
    included)."""
    args = ["java", "-cp", classpath, "org.apache.kafka.shell.MetadataShell", "--snapshot", str(segment), *command]
    done, seconds = timed(lambda: subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                                                 check=False))
    if done.returncode != 0:
        raise ShellUnavailableError(f"Kafka's shell on {segment} exited {done.returncode}: {done.stderr[-1000:]}")
    return done.stdout, seconds
