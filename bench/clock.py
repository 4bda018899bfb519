"""How the benchmarks measure: wall time of one action, the stages of a replay, and peak resident memory (issue 20
asks for the driver's: in ``local[*]`` the driver JVM is also the executor, so its peak is the replay's)."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

Result = TypeVar("Result")


def timed(action: Callable[[], Result]) -> tuple[Result, float]:
    """``action()``'s result and its wall seconds."""
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


class StageClock:
    """A ``progress`` callback that remembers when each stage of ``run_replay`` started."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, float]] = []

    def __call__(self, stage: str) -> None:
        self.starts.append((stage, time.perf_counter()))

    def durations(self) -> list[tuple[str, float]]:
        ends = [t for _, t in self.starts[1:]] + [time.perf_counter()]
        return [(stage, end - start) for (stage, start), end in zip(self.starts, ends, strict=True)]


def driver_pid(spark: SparkSession) -> int | None:
    """The driver JVM's process id; None over Spark Connect (no JVM of ours)."""
    jvm = getattr(spark.sparkContext, "_jvm", None) if not _connect(spark) else None
    if jvm is None:
        return None
    try:
        return int(jvm.java.lang.ProcessHandle.current().pid())
    except Py4JError:
        return None


def _connect(spark: SparkSession) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def peak_rss(pid: int) -> int | None:
    """A process's peak resident set in bytes (``VmHWM`` of ``/proc/<pid>/status``); None where there is none."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # kB
    return None


def reset_peak_rss(pid: int) -> bool:
    """Reset a process's ``VmHWM`` to its current RSS (``clear_refs`` 5, Linux 4.0+), so that the next peak is one
    step's: True when done."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def python_peak_rss() -> int:
    """This Python process's peak resident set in bytes (``ru_maxrss``: KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / (1 << 20):,.0f} MiB"


def memory_line(spark: SparkSession, when: str) -> str:
    """One line: the driver JVM's and this Python process's peak RSS so far, and the driver's heap setting."""
    pid = driver_pid(spark)
    jvm_peak = None if pid is None else peak_rss(pid)
    heap = spark.conf.get("spark.driver.memory", "n/a") if not _connect(spark) else "n/a"
    return (f"memory {when}: driver JVM peak RSS {mib(jvm_peak)} (heap {heap}); "
            f"Python peak RSS {mib(python_peak_rss())}")


__all__ = ["StageClock", "driver_pid", "memory_line", "mib", "peak_rss", "python_peak_rss", "reset_peak_rss", "timed"]
