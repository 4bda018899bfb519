#!/usr/bin/env bash
# Idempotent setup: JDK 17+ for Spark, Python 3.11/3.12, .venv with the project installed editable, the
# delta-spark/spark-avro jars, Kafka's jars (for the Kafka-referee tests) and the replay's own jar (replay/jvm).
# Re-runs are fast: the pip step is skipped while .venv/.installed-<sha256 of pyproject.toml> exists.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf 'bootstrap: %s\n' "$*"; }
die() { printf 'bootstrap: ERROR: %s\n' "$*" >&2; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
apt_install() {
  say "apt-get install $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Spark launches $JAVA_HOME/bin/java when JAVA_HOME is set, else java on PATH: check the same one.
java_cmd() { if [ -n "${JAVA_HOME:-}" ]; then echo "$JAVA_HOME/bin/java"; else echo java; fi; }
java_major() {
  local line
  line=$("$(java_cmd)" -version 2>&1 | head -n 1) || return 1
  # "17.0.15" -> 17; the old scheme "1.8.0_392" -> 8
  sed -nE 's/.*version "1\.([0-9]+).*/\1/p; t; s/.*version "([0-9]+).*/\1/p' <<<"$line"
}
java_ok() { local major; major=$(java_major 2>/dev/null) && [ -n "$major" ] && [ "$major" -ge 17 ]; }
# javac builds the replay's own JVM functions (lakehouse.replay_jar): a JDK, not only a JRE.
javac_ok() { if [ -n "${JAVA_HOME:-}" ]; then [ -x "$JAVA_HOME/bin/javac" ]; else command -v javac >/dev/null; fi; }

if java_ok && javac_ok; then
  say "java $(java_major) found (with javac)"
elif is_root && command -v apt-get >/dev/null; then
  mkdir -p /usr/share/man/man1  # slim Debian images lack it and the JDK's postinst fails without it
  # Debian 12 ships openjdk-17; Debian 13 only openjdk-21 (also supported by Spark 4).
  apt_install openjdk-17-jdk-headless 2>/dev/null || apt_install openjdk-21-jdk-headless
  java_ok && javac_ok || die "a JDK was installed but $(java_cmd) is still not Java 17+ with javac: fix JAVA_HOME or PATH"
  say "java $(java_major) installed (with javac)"
else
  die "a JDK 17+ (java and javac) not found: install openjdk-17-jdk-headless (or set JAVA_HOME to a JDK 17+), then re-run"
fi

python_ok() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] < (3, 13))' 2>/dev/null; }
find_python() {
  local candidate
  for candidate in ${PYTHON:-} python3.11 python3.12 python3; do
    if command -v "$candidate" >/dev/null && python_ok "$candidate"; then command -v "$candidate"; return; fi
  done
  return 1
}

if [ -x .venv/bin/python ] && python_ok .venv/bin/python; then
  say ".venv exists ($(.venv/bin/python --version))"
else
  [ ! -e .venv ] || die ".venv exists but has no Python 3.11/3.12: remove it and re-run"
  if ! py=$(find_python) && is_root && command -v apt-get >/dev/null; then
    apt_install python3 python3-venv
  fi
  py=$(find_python) || die "Python 3.11 or 3.12 not found: install one (or set PYTHON=/path/to/it), then re-run"
  if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
    is_root && command -v apt-get >/dev/null || die "$py cannot create venvs: install python3-venv, then re-run"
    apt_install python3-venv
  fi
  say "creating .venv with $("$py" --version)"
  "$py" -m venv .venv
fi

stamp=".venv/.installed-$(.venv/bin/python -c \
  'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' pyproject.toml)"
if [ -e "$stamp" ]; then
  say "dependencies up to date (pyproject.toml unchanged)"
else
  export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
  log=.venv/pip-install.log  # setuptools' build warnings are long: shown only when pip fails
  pip_quiet() {
    .venv/bin/python -m pip install --quiet "$@" >"$log" 2>&1 || { cat "$log" >&2; die "pip install $* failed"; }
  }
  say "upgrading pip"
  pip_quiet --upgrade pip
  say "pip install -e '.[test]'"
  pip_quiet -e '.[test]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# delta-spark and spark-avro for the pinned Spark (lakehouse.jars): fetched once into a cache shared by clones;
# without them (no repository reachable) every command runs on the delta-rs engine, so this never fails setup.
# Kafka's own jars (4.4.0, 3.9.2), each in a cache directory of its own, for the tests that make Kafka the
# referee (tests/test_kafka_referee.py) and Kafka 4.4's tools (kafka-tools: DumpLogSegments, tests/test_kafka_dump_log.py);
# without them those tests skip. One line per set; re-runs read manifests.
while IFS= read -r line; do say "$line"; done < <(.venv/bin/python -m lakehouse.jars fetch spark kafka-4.4.0 kafka-3.9.2 kafka-tools-4.4.0 \
  || echo "jars: lakehouse.jars failed; the lake engine will be delta-rs and the Kafka-referee tests will skip")
# The replay's own JVM functions (replay/jvm), compiled against the Spark pyspark ships into the jar cache.
say "replay jar: $(.venv/bin/python -m lakehouse.replay_jar)"
# Spark's classes archived once for every command's driver JVM (lakehouse.class_archive): built the first time (about
# a minute), cached beside the jars; without it commands start as before, so this never fails setup.
say "$(.venv/bin/python -m lakehouse.class_archive_build || echo "class archive: lakehouse.class_archive_build failed; commands start without one")"
say "ready"
