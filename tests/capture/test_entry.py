"""The capture children's shared start: the user's script and entry, options, versions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from irprof.capture.entry import EntryError, add_entry_options, load_entry, package_versions


def test_the_entry_of_a_script_is_found_and_its_module_registered(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text("def irprof_model(mode='infer'):\n    return mode\n")
    entry = load_entry(script, "irprof_model", module_name="irprof_test_entry_model")
    assert entry(mode="train") == "train"
    assert "irprof_test_entry_model" in sys.modules


def test_a_missing_script_or_entry_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(EntryError, match="no such script"):
        load_entry(tmp_path / "absent.py", "irprof_model", module_name="irprof_test_absent")
    script = tmp_path / "empty.py"
    script.write_text("x = 1\n")
    with pytest.raises(EntryError, match="defines no callable 'run'; pass --entry NAME"):
        load_entry(script, "run", module_name="irprof_test_empty")


def test_every_child_reads_the_same_entry_options() -> None:
    parser = argparse.ArgumentParser()
    add_entry_options(parser, ("infer", "train"))
    options = parser.parse_args(["--mode", "train", "--steps", "3"])
    assert (options.entry, options.steps, options.warmup, options.mode) == (
        "irprof_model", 3, 2, "train",
    )  # fmt: skip
    with pytest.raises(SystemExit):
        parser.parse_args(["--mode", "fly"])


def test_versions_name_python_and_skip_what_is_not_installed() -> None:
    found = package_versions({"framework": "1.0"}, ("pytest", "no-such-distribution-irprof"))
    assert found["framework"] == "1.0" and "python" in found and "pytest" in found
    assert "no-such-distribution-irprof" not in found
