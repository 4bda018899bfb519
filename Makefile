# Entry points for people and CI. Every target that needs Python runs `setup` first (fast when set up).
VENV := .venv

.PHONY: setup demo test lint bench clean

setup:
	@bash scripts/bootstrap.sh

demo: setup
	$(VENV)/bin/kraft-replay demo

# pytest exits 5 when it collects no tests: that fails this target like any other non-zero exit. The slowest
# tests are listed at the end: the suite's time is a target (issue 41).
test: setup
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadgroup --durations=30

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# The replay's whole measurement (floor, Kafka's own fold, naive re-fold, ours; 1 M, 10 M, 30 M): bench/run_all.sh.
bench: setup
	bash bench/run_all.sh

# Build artefacts and demo output only: .venv stays (make setup would rebuild it slowly).
clean:
	rm -rf build dist *.egg-info kraft-demo .pytest_cache spark-warehouse metastore_db derby.log
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
