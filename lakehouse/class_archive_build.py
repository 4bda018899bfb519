"""Writing the driver's class archive (``lakehouse.class_archive``) once, as ``make setup`` does:
``python -m lakehouse.class_archive_build`` prints one line (the archive, built or already there).

A driver JVM started with ``-XX:ArchiveClassesAtExit`` runs a small Spark workload of the kinds a command runs (a
session's start, DataFrames from Python rows, windows, aggregates of structs, joins, Parquet and Delta writes and
reads, Arrow fetches) and dumps the classes it loaded as it exits. The workload runs in a child process of its own,
which stops its JVM and waits for it (the dump happens as the JVM exits); the archive is written under a temporary
name and renamed into place, then its stamp (``lakehouse.class_archive.stamp``), so a build killed half-way, or two
at once, never leaves a partial archive a command would map. Classes of the jars Spark loads at run time
(``spark.jars``: delta-spark, the replay's jar) are not archived: the JDK archives the class path's classes only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.class_archive import (
    ARCHIVE_ENV,
    OFF,
    archive_path,
    archives_dir,
    installation,
    java_options,
    stamp,
    stamp_path,
)
from lakehouse.spark import SparkOptions, get_spark, has_delta_spark

TRAINING_ROWS = 20_000
BUILD_TIMEOUT = 600.0


def workload(spark: SparkSession, directory: Path) -> None:
    """Spark work of the kinds the commands do, so that their classes are loaded (and archived)."""
    rows = spark.createDataFrame([(i % 97, i, f"v{i}", [i, i + 1]) for i in range(1_000)],
                                 "k INT, o BIGINT, s STRING, a ARRAY<INT>")
    wide = spark.range(TRAINING_ROWS).select((F.col("id") % 97).cast("int").alias("k"), F.col("id").alias("o"),
                                             F.col("id").cast("string").alias("s"), F.array(F.col("id")).alias("a"))
    both = rows.unionByName(wide)
    by_key = Window.partitionBy("k").orderBy("o")
    versions = both.select("*", F.lag("o").over(by_key).alias("before"), F.row_number().over(by_key).alias("n"))
    grouped = versions.groupBy("k").agg(F.sort_array(F.collect_list(F.struct("o", "s", "a"))).alias("versions"),
                                        F.max("n").alias("count"))
    joined = grouped.join(both.groupBy("k").agg(F.min("o").alias("first")), "k", "left")
    joined.repartition(2, "k").sortWithinPartitions("k").write.mode("overwrite").parquet(str(directory / "parquet"))
    spark.read.parquet(str(directory / "parquet")).where(F.col("count") > 3).toArrow()
    if has_delta_spark(spark):
        table = str(directory / "delta")
        versions.write.format("delta").mode("overwrite").save(table)
        spark.read.format("delta").load(table).where(F.col("k") == 3).toArrow()
    spark.sql(f"SELECT k, count(*) AS n FROM parquet.`{directory / 'parquet'}` GROUP BY k").collect()


def _train(archive: Path) -> None:
    """The child's part: a session whose JVM dumps its classes to ``archive`` at exit, the workload, then the JVM
    stopped and waited for."""
    # a command's driver (no archive: off here), dumping its classes
    spark = get_spark(SparkOptions(app_name="kraft-replay-class-archive", announce=False,
                                   java_options=(f"-XX:ArchiveClassesAtExit={archive}", "-Xlog:cds=off")))
    with tempfile.TemporaryDirectory(prefix="kraft-class-archive-") as directory:
        workload(spark, Path(directory))
    gateway = SparkContext._gateway
    spark.stop()
    assert gateway is not None
    gateway.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:  # the JVM exits when its stdin closes (PythonGatewayServer), dumping as it goes
        process.stdin.close()
        exited = process.wait(timeout=BUILD_TIMEOUT)
        if exited != 0:  # a JVM that did not exit as asked may have left half an archive
            raise SystemExit(f"the driver JVM exited {exited} while writing {archive}")


def build(rebuild: bool = False) -> str:
    """The archive of this JDK and Spark, built unless it is there (or ``rebuild``); one line saying which."""
    path, installed = archive_path(), installation()
    if path is None or installed is None:
        return f"class archive: none ({ARCHIVE_ENV}={OFF} or no java)"
    removed = prune(archives_dir())
    if java_options() and not rebuild:
        return f"class archive: {path} (cached{removed})"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    written = stamp_path(path).with_name(f"{partial.name}.built")
    started = time.monotonic()
    env = {**os.environ, ARCHIVE_ENV: OFF}  # the training JVM maps no archive of its own
    try:
        done = subprocess.run([sys.executable, "-m", "lakehouse.class_archive_build", "--train", str(partial)],
                              env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
        if done.returncode != 0 or not partial.is_file():
            return (f"class archive: not built (the training run exited {done.returncode}); commands start "
                    f"without one: {done.stderr.strip()[-500:]}")
        os.replace(partial, path)
        written.write_text(stamp(path, installed), encoding="utf-8")
        os.replace(written, stamp_path(path))  # last: the archive is mapped from now on
    except subprocess.TimeoutExpired:
        return (f"class archive: not built (the training run took over {BUILD_TIMEOUT:.0f} s); commands start "
                "without one")
    finally:
        partial.unlink(missing_ok=True)
        written.unlink(missing_ok=True)
    return f"class archive: {path} (built in {time.monotonic() - started:.0f} s{removed})"


def prune(directory: Path) -> str:
    """Remove the archives in ``directory`` whose java or Spark installation is gone (a deleted clone's, a JDK
    removed): each is about 180 MB. What was removed, as the build's line adds it."""
    gone = 0
    for stamped in directory.glob("*.jsa.built"):
        try:
            belongs_to = stamped.read_text(encoding="utf-8").splitlines()[1:3]
        except (OSError, UnicodeDecodeError):
            continue
        if len(belongs_to) == 2 and not all(Path(part).exists() for part in belongs_to):
            stamped.with_suffix("").unlink(missing_ok=True)
            stamped.unlink(missing_ok=True)
            gone += 1
    return f"; {gone} of installations gone removed" if gone else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rebuild", action="store_true", help="build it again though it is there")
    parser.add_argument("--train", type=Path, help=argparse.SUPPRESS)  # the child's part
    args = parser.parse_args()
    if args.train is not None:
        _train(args.train)
        return
    print(build(args.rebuild))


if __name__ == "__main__":
    main()
