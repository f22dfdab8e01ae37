"""The example notebook runs top to bottom on the bundled data (so it cannot rot)."""

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "dptrace_tour.ipynb"


def test_example_notebook_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("dptrace Dataset" in h for h in html)
    assert any("dptrace Report" in h for h in html)
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs)
    # dptrace.compare and dptrace.scaling (issue 16): their findings and the scaling table
    assert any("The job throughput fell" in h for h in html)
    assert any("efficiency" in h and "speedup" in h for h in html)
