"""The machine-peak options shared by the commands that draw a roofline (`top`, `report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

PeaksOption = Annotated[
    Path | None,
    typer.Option(
        "--peaks", help="Cache of this machine's measured peaks (~/.cache/irprof/peaks.json)."
    ),
]
PeakGflopsOption = Annotated[
    float | None, typer.Option("--peak-gflops", help="Compute roof (with --peak-gbps).")
]
PeakGbpsOption = Annotated[
    float | None, typer.Option("--peak-gbps", help="Memory roof (with --peak-gflops).")
]
