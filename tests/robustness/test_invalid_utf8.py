"""Files irprof reads with a typed JSON schema, holding a string that is not UTF-8.

msgspec raises `UnicodeDecodeError` (not its `DecodeError`) for invalid UTF-8 inside a string,
so a reader catching only msgspec's errors let a traceback through where a clear error naming
the file belongs (found by `test_fuzz_bundles`, on an `opprofile.tf.json`). Each file here is
valid JSON of the right shape but for bytes 0xff 0xfe inside a string value.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from irprof.analyses.rank_dataset import open_rank_dataset
from irprof.coverage import load_coverages
from irprof.errors import IrprofError
from irprof.frameworks.torch.events import load_fx_program
from irprof.opprofile import OpProfile
from irprof.trace.io import load_events_json

BAD = b'"\xff\xfe"'


def write(path: Path, text: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return path


CASES: dict[str, tuple[str, bytes, Callable[[Path], object]]] = {
    "opprofile": (
        "opprofile.json",
        b'{"version": 1, "level": ' + BAD + b', "entries": []}',
        OpProfile.load,
    ),
    "coverage": ("coverage.json", b'{"levels": {' + BAD + b": {}}}", load_coverages),
    "events": ("events.json", b'{"format": ' + BAD + b', "version": 1}', load_events_json),
    "fx": ("torch.fx.json", b'{"nodes": [], "mode": ' + BAD + b"}", load_fx_program),
    "rank dataset": (
        "dataset.json",
        b'{"format": ' + BAD + b"}",
        lambda path: open_rank_dataset(path.parent),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_string_that_is_not_utf8_is_an_error_naming_the_file(case: str, tmp_path: Path) -> None:
    name, text, read = CASES[case]
    path = write(tmp_path / case.replace(" ", "_") / name, text)
    with pytest.raises(IrprofError) as raised:
        read(path)
    assert str(path) in str(raised.value) or str(path.parent) in str(raised.value)
