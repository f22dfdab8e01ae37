"""The SambaNova tiles section: a heatmap of XRDU x RDU x TILE, instances, idle tiles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import analyses
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as tl


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    tiles = ds["tiles"]
    if tiles.empty:
        return None
    a = analyses.of(ds, opts)
    return Section(
        SPEC.name, SPEC.title,
        "Each cell is one tile: its mean %exec over the snapshots, and the instance (#n, one "
        "PID of the data-parallel job) that owns it. Instances list their tiles and how busy "
        "they kept them; load overhead is %pload + %aload + %chkpt. Idle tiles never ran work.",
        {
            "overview": tl.overview(tiles),
            "grid": tl.grid(tiles),
            "instances": a["tiles.instances"],
            "idle_tiles": a["tiles.idle_tiles"],
            "exec_series": tl.exec_series(tiles),
        },
        figure_args={"tiles": tiles},
    )


def facts(section: Section) -> dict[str, str]:
    o = section.tables["overview"]
    return {"instances": f"tiles: {int(o['instances'].sum())} instance(s) in {len(o)} "
                         "listing(s)"}


SPEC = register_section(SectionSpec(
    "tiles", "SambaNova tiles", order=60, build=build,
    figures="dptrace.formats.sntilestat.figures:tiles_figures",
    terminal="dptrace.formats.sntilestat.terminal:draw_tiles", facts=facts))
