# Entry points for people and CI. Every target that needs Python runs `setup` first (fast when set up).
VENV := .venv

.PHONY: setup demo test lint bench clean

setup:
	@bash scripts/bootstrap.sh

demo: setup
	$(VENV)/bin/kraft-replay demo

# pytest exits 5 when it collects no tests: that fails this target like any other non-zero exit.
test: setup
	$(VENV)/bin/python -m pytest -q

lint: setup
	$(VENV)/bin/ruff check .

# Placeholder until the benchmarks exist: runs bench/run_all.sh when it is there.
bench: setup
	@if [ -f bench/run_all.sh ]; then bash bench/run_all.sh; else echo "bench: bench/run_all.sh does not exist yet"; fi

# Build artefacts and demo output only: .venv stays (make setup would rebuild it slowly).
clean:
	rm -rf build dist *.egg-info kraft-demo .pytest_cache spark-warehouse metastore_db derby.log
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
