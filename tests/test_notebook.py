"""notebooks/time_travel.ipynb runs top to bottom (its cells assert what they show) and is committed clean.

The notebook runs in a kernel of its own, a process with its own Spark session, as a user runs it: the test does
not use the run's session, so it runs on the worker of the tests that start none in the test process."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "time_travel.ipynb"


def test_notebook_is_committed_with_outputs_cleared() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert len(code) >= 7
    assert all(not cell.outputs and cell.execution_count is None for cell in code)


def test_notebook_runs_top_to_bottom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFT_NOTEBOOK_DIR", str(tmp_path))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    text = "\n".join(out.get("text", "") for out in outputs if out.output_type == "stream")
    assert "replayed kRaFtNoTeBoOkClUsTeR00" in text and "HTML report:" in text
    images = [out for out in outputs if out.output_type == "display_data" and "image/png" in out.get("data", {})]
    assert len(images) == 3  # the partition timeline, cluster health, broker fencing
    assert (tmp_path / "report" / "index.html").is_file()
