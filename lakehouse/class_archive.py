"""The driver JVM's class-data-sharing archive (the JDK's AppCDS): Spark's classes mapped from one file rather than
read from its jars, parsed and verified anew by every command that starts Spark.

The archive is a JDK dynamic archive (``-XX:ArchiveClassesAtExit``) written once by ``make setup``
(``lakehouse.class_archive_build``) into the cache beside the jars, one per JDK and Spark installation
(``archive_path``). A command's driver maps it with ``-XX:SharedArchiveFile``; the JVM itself checks that the archive
was dumped by the same JVM build from the same class path (Spark's ``jars/``, their sizes and times) and otherwise
runs without it, so a stale or foreign archive only costs the speed it would have given. The JVM's own lines about
such an archive are silenced (``-Xlog:cds=off``): a command prints nothing about it. The JVM does not check that the
file is whole (a truncated archive crashes it as it maps the file): the build leaves a stamp beside the archive (its
size and modification time, ``stamp``), and a driver maps only an archive that still matches its stamp.

``KRAFT_REPLAY_CLASS_ARCHIVE``: ``off`` starts every JVM without one (what a benchmark compares with), a path uses
that file instead of the cache's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pyspark

from lakehouse.jars import SPARK_HOME, jars_cache

ARCHIVE_ENV = "KRAFT_REPLAY_CLASS_ARCHIVE"
OFF = "off"
# The JVM's unified-logging tags of class data sharing: their warnings (an archive it cannot map) go to stdout.
SILENT = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def launched_java() -> Path | None:
    """The java executable Spark launches (``spark-class``: ``$JAVA_HOME/bin/java``, else ``java`` on PATH),
    resolved through its links; None when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    return Path(java).resolve() if java and os.access(java, os.X_OK) else None


def installation() -> tuple[Path, Path] | None:
    """What an archive belongs to: the java Spark launches and Spark's installation (its ``jars/`` are the class
    path); None when there is no java."""
    java = launched_java()
    return None if java is None else (java, SPARK_HOME.resolve())


def archive_path() -> Path | None:
    """Where the archive of this JDK and Spark installation is (or goes): the cache's, named by both, or the
    ``KRAFT_REPLAY_CLASS_ARCHIVE`` file; None when it is ``off`` or there is no java."""
    chosen = os.environ.get(ARCHIVE_ENV, "").strip()
    installed = installation()
    if chosen == OFF or installed is None:
        return None
    if chosen:
        return Path(chosen)
    digest = hashlib.sha256("\n".join((*map(str, installed), pyspark.__version__)).encode()).hexdigest()[:16]
    return archives_dir() / f"spark-{pyspark.__version__}-{digest}.jsa"


def archives_dir() -> Path:
    """The cache's directory of archives, beside the jars'."""
    return jars_cache().parent / "class-archives"


def stamp_path(archive: Path) -> Path:
    """The file beside ``archive`` that the build writes once the archive is whole (``stamp``)."""
    return archive.with_name(f"{archive.name}.built")


def stamp(archive: Path, installed: tuple[Path, Path]) -> str:
    """What the archive's stamp says of it: its size and modification time (ns), then the java and the Spark it
    belongs to (``installation``: an archive whose installation is gone is removed by the next build), then Spark's
    jars as the JVM checks them (a digest of each one's name, size and modification time: Spark installed again at
    the same path has other jars, and the JVM then maps no class of the archive)."""
    status = archive.stat()
    jars = [(jar.name, jar.stat()) for jar in sorted((installed[1] / "jars").glob("*.jar"))]
    listed = "\n".join(f"{name} {status.st_size} {status.st_mtime_ns}" for name, status in jars)
    digest = hashlib.sha256(listed.encode()).hexdigest()[:16]
    return "\n".join((f"{status.st_size} {status.st_mtime_ns}", *map(str, installed), f"jars {digest}", ""))


def java_options() -> tuple[str, ...]:
    """The driver JVM's options that map the archive, when there is one as it was built (none otherwise)."""
    path, installed = archive_path(), installation()
    try:
        whole = (path is not None and installed is not None
                 and stamp_path(path).read_text(encoding="utf-8") == stamp(path, installed))
    except (OSError, UnicodeDecodeError):
        whole = False
    return (f"-XX:SharedArchiveFile={path}", *SILENT) if whole else ()


__all__ = ["ARCHIVE_ENV", "OFF", "SILENT", "archive_path", "archives_dir", "installation", "java_options",
           "launched_java", "stamp", "stamp_path"]
