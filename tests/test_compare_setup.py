"""``dptrace compare`` / ``scaling`` say what changed in the setup (issue 29, 3.1), on real
PyTorch DDP logs of one script on Polaris run over TCP sockets, over the AWS libfabric
plugin without GPUDirect RDMA and with it (tests/fixtures/compare_setup, README there).
Every value expected is read here from the logs' own lines, not from dptrace's tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dptrace
from dptrace.analysis import compare as cmp
from dptrace.cli import main
from dptrace.formats.nccl import compute as nccl

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "compare_setup"
SOCKET = FIX / "polaris_resnet50_ddp_2n8gpu_socket_2025-06-26.log"
NOGDR = FIX / "polaris_resnet50_ddp_2n8gpu_ofi_nogdr_2025-01-15.log"
GDR = FIX / "polaris_resnet50_ddp_2n8gpu_ofi_gdr_2025-01-15.log"
TIMEOUT = HERE / "fixtures" / "nccl" / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log"


def _network(path: Path) -> str:
    """The one network every process of the log chose ('Using network X')."""
    nets = set(re.findall(r"NCCL INFO Using network (.+)$", path.read_text(), re.M))
    assert len(nets) == 1
    return nets.pop().strip()


def _gdr(path: Path) -> str:
    text = path.read_text()
    net = re.findall(r"via NET/[^\n]*", text)
    assert net
    return "yes" if all(line.rstrip().endswith("/GDRDMA") for line in net) else \
        "no" if not any("/GDRDMA" in line for line in net) else "mixed"


def _env(path: Path) -> dict[str, str]:
    return dict(re.findall(r"NCCL INFO (NCCL_[A-Z_]+) set by environment to (\S+?)\.?$",
                           path.read_text(), re.M))


def _throughput(path: Path) -> float:
    """Rank 0's 'Throughput: X images/s' lines (a global figure), the first as warm-up."""
    v = [float(x) for x in re.findall(r"^Throughput: ([\d.]+) images/s", path.read_text(),
                                      re.M)]
    assert len(v) == 10
    return sum(v[1:]) / len(v[1:])


def _compare(base: Path, cand: Path, labels=("base", "cand")) -> dptrace.Report:
    return dptrace.compare(dptrace.load(base), dptrace.load(cand), labels=labels)


@pytest.fixture(scope="module")
def socket_vs_gdr():
    return _compare(SOCKET, GDR, ("socket", "ofi"))


def _row(setup, setting):
    hit = setup[setup["setting"] == setting]
    assert len(hit) == 1, setting
    return hit.iloc[0]


def test_setup_table_says_network_transport_gdr_and_settings_of_each_run(socket_vs_gdr):
    setup = socket_vs_gdr.tables["setup.setup"]
    assert list(setup.columns) == ["setting", "socket", "ofi", "changed"]
    net = _row(setup, "NCCL network")
    assert (net["socket"], net["ofi"]) == (_network(SOCKET), _network(GDR)) \
        == ("Socket", "AWS Libfabric")
    assert bool(net["changed"])
    gdr = _row(setup, "GPUDirect RDMA")
    assert (gdr["socket"], gdr["ofi"]) == (_gdr(SOCKET), _gdr(GDR)) == ("no", "yes")
    tr = _row(setup, "transports")
    assert "NET/Socket" in tr["socket"] and "NET/AWS Libfabric" in tr["ofi"]
    version = re.search(r"NCCL version (\S+)", SOCKET.read_text()).group(1)
    v = _row(setup, "NCCL version")
    assert v["socket"] == v["ofi"] == version and not bool(v["changed"])
    assert _row(setup, "libfabric provider")["ofi"] == "cxi"
    env = _env(GDR)
    assert env == {"NCCL_NET_GDR_LEVEL": "PHB", "NCCL_CROSS_NIC": "1",
                   "NCCL_SOCKET_IFNAME": "hsn"} and not _env(SOCKET)
    for name, value in env.items():
        r = _row(setup, name)
        assert (r["socket"], r["ofi"], bool(r["changed"])) == \
            (nccl.NOT_STATED, value, True)
    ws = _row(setup, "world size")
    assert ws["socket"] == ws["ofi"] == "8" and not bool(ws["changed"])


def test_changed_network_with_changed_throughput_is_a_finding_with_both_numbers(
        socket_vs_gdr):
    f = socket_vs_gdr.tables["findings.findings"]
    hit = f[f["kind"] == "setup_change"]
    assert len(hit) == 1
    r = hit.iloc[0]
    base, cand = _throughput(SOCKET), _throughput(GDR)
    pct = (cand - base) / base * 100
    assert round(pct, 1) == 139.9
    msg = str(r["message"])
    assert "NCCL network: Socket -> AWS Libfabric" in msg
    assert "GPUDirect RDMA: no -> yes" in msg
    assert f"rose {pct:.1f}%" in msg and f"{base:,.0f} -> {cand:,.0f} images/s" in msg
    assert "(faster)" in msg and str(r["severity"]) == "info"
    assert r["value"] == pytest.approx(pct)


def test_the_reverse_direction_is_a_warning_that_says_slower():
    rep = _compare(GDR, SOCKET, ("ofi", "socket"))
    r = rep.tables["findings.findings"].set_index("kind").loc["setup_change"]
    base, cand = _throughput(GDR), _throughput(SOCKET)
    assert str(r["severity"]) == "warning"
    msg = str(r["message"])
    assert "NCCL network: AWS Libfabric -> Socket" in msg
    assert f"fell {abs(cand - base) / base * 100:.1f}%" in msg and "(slower)" in msg
    assert "NCCL_NET_GDR_LEVEL" in str(r["hint"])


def test_gpudirect_rdma_alone_is_a_change_of_the_network_path():
    rep = _compare(NOGDR, GDR)
    setup = rep.tables["setup.setup"]
    changed = set(setup.loc[setup["changed"].astype(bool), "setting"])
    assert "GPUDirect RDMA" in changed and "NCCL network" not in changed
    msg = str(rep.tables["findings.findings"].set_index("kind").loc["setup_change", "message"])
    base, cand = _throughput(NOGDR), _throughput(GDR)
    assert "GPUDirect RDMA: no -> yes" in msg and "NCCL network" not in msg
    assert f"rose {(cand - base) / base * 100:.1f}%" in msg


def test_a_network_change_without_a_throughput_on_one_side_is_info():
    """The libfabric rerun of the socket job timed out in its first ALLGATHER: no
    Throughput line, so the change is named without a cost."""
    rep = _compare(SOCKET, TIMEOUT)
    f = rep.tables["findings.findings"]
    r = f[f["kind"] == "setup_change"].iloc[0]
    assert str(r["severity"]) == "info"
    assert "Socket -> AWS Libfabric" in str(r["message"])
    assert "not known for both runs" in str(r["message"])


def test_a_run_against_itself_changes_no_setting():
    rep = dptrace.compare(dptrace.load(GDR), dptrace.load(GDR), labels=("a", "b"))
    setup = rep.tables["setup.setup"]
    assert len(setup) and not setup["changed"].astype(bool).any()
    assert "setup_change" not in set(rep.tables["findings.findings"]["kind"].astype(str))


def test_setup_in_terminal_json_html_and_scaling(tmp_path, capsys):
    out = tmp_path / "c.json"
    html = tmp_path / "c.html"
    main(["compare", f"socket={SOCKET}", f"ofi={GDR}", "--json", str(out), "--html",
          str(html), "--width", "120"])
    text = capsys.readouterr().out
    assert "Setup" in text and "GPUDirect RDMA" in text and "changed" in text
    data = json.loads(out.read_text())
    rows = data["sections"]["setup"]["tables"]["setup"]
    net = next(r for r in rows if r["setting"] == "NCCL network")
    assert net == {"setting": "NCCL network", "socket": "Socket", "ofi": "AWS Libfabric",
                   "changed": True}
    assert "AWS Libfabric" in html.read_text()
    sc = dptrace.scaling({"a": dptrace.load(NOGDR), "b": dptrace.load(GDR)})
    assert list(sc.tables["setup.setup"].columns) == ["setting", "a", "b", "changed"]


def test_setup_of_runs_without_nccl_lines_has_only_what_they_say():
    import pandas as pd
    runs = pd.DataFrame({"run": ["a", "b"], "world_size": [8, 16], "nodes": [None, None],
                         "launcher": [None, None]})
    t = cmp.setup(runs, None, {"a": (256.0, ""), "b": (None, "varies (1 to 4)")},
                  ["a", "b"])
    assert t["setting"].tolist() == ["world size", "global batch per step"]
    assert t["changed"].tolist() == [True, True]
    assert t.loc[1, "a"] == "256"
