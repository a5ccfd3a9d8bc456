"""The import graph of `src/irprof` follows the layers written in docs/architecture.md.

Every `import irprof.X` / `from irprof.X import ...` anywhere in a module (also inside functions
and TYPE_CHECKING blocks, which are still dependencies a reader must know) is checked: a unit may
import its own unit and units on lower lines of the ```layers block, nothing else.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "irprof"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def documented_block(name: str) -> dict[str, int]:
    """Word -> line number (0 = top) in the ```<name> block of docs/architecture.md."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = re.search(rf"```{name}\n(.*?)```", text, re.S)
    assert found, f"{ARCHITECTURE}: no ```{name} block"
    ranks: dict[str, int] = {}
    for rank, line in enumerate(found.group(1).split("\n")):
        for word in line.split():
            assert word not in ranks, f"{word} listed twice in {ARCHITECTURE}"
            ranks[word] = rank
    return ranks


def documented_layers() -> dict[str, int]:
    """Unit -> rank (0 = top) from the ```layers block."""
    return documented_block("layers")


def unit_of(module: str) -> str:
    """`irprof.frameworks.tf.correlate` -> `correlate`; `irprof` (the package init) -> `irprof`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "irprof"


def module_imports() -> dict[str, set[str]]:
    """Module name -> the irprof modules it imports (anywhere in its body)."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name.endswith("_pb2.py"):
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        out[module] = {name for name in names if name == "irprof" or name.startswith("irprof.")}
    return out


def test_every_unit_is_placed_in_a_layer() -> None:
    ranks = documented_layers()
    units = {unit_of(module) for module in module_imports()}
    assert units - set(ranks) == set(), "add these units to docs/architecture.md's layers"
    assert set(ranks) - units == set(), "docs/architecture.md lists units that do not exist"


def layer_violations(imports: dict[str, set[str]], ranks: dict[str, int]) -> list[str]:
    """Every import of a unit on the importer's own line or above."""
    found = []
    for module, imported in sorted(imports.items()):
        unit = unit_of(module)
        for name in sorted(imported):
            target = unit_of(name)
            if target not in ranks:  # `from irprof.x import name`: the unit is x's, listed too
                continue
            if target != unit and ranks[target] <= ranks[unit]:
                found.append(f"{module} imports {name} ({unit} -> {target})")
    return found


def test_no_import_runs_up_or_sideways() -> None:
    assert layer_violations(module_imports(), documented_layers()) == []


def test_the_layer_check_catches_upward_and_sideways_imports() -> None:
    planted = {
        "irprof.correlate.ledger": {"irprof.passes.reattach"},  # up: passes sit above correlate
        "irprof.readers.chrome.reader": {"irprof.coverage"},  # sideways: same line
        "irprof.frameworks.tf.pgo_pass": {"irprof.frameworks.tf.correlate"},  # down: allowed
    }
    assert layer_violations(planted, documented_layers()) == [
        "irprof.correlate.ledger imports irprof.passes.reattach (correlate -> passes)",
        "irprof.readers.chrome.reader imports irprof.coverage (readers -> coverage)",
    ]


def framework_sides() -> dict[str, int]:
    """Framework module name -> side rank (0 = top) from the ```framework-sides block."""
    return documented_block("framework-sides")


def framework_part(module: str) -> tuple[str, str] | None:
    """`irprof.frameworks.tf.capture` -> ("tf", "capture"); None outside a framework package."""
    parts = module.split(".")
    if len(parts) < 4 or parts[:2] != ["irprof", "frameworks"]:
        return None
    return parts[2], parts[3]


# The one module of a framework that others may import: IREE compiling another stack's IR.
SHARED_FRAMEWORK_MODULES = {"irprof.frameworks.iree.backend"}


def framework_violations(imports: dict[str, set[str]], sides: dict[str, int]) -> list[str]:
    """Imports across frameworks, and from a framework's capture side up to its correlation side."""
    found = []
    for module, imported in sorted(imports.items()):
        source = framework_part(module)
        if source is None:
            continue
        for name in sorted(imported):
            target = framework_part(name)
            if target is None:
                continue
            if target[0] != source[0]:
                if not any(name.startswith(shared) for shared in SHARED_FRAMEWORK_MODULES):
                    found.append(f"{module} imports {name} (framework {source[0]} -> {target[0]})")
            elif sides[target[1]] < sides[source[1]]:
                found.append(f"{module} imports {name} ({source[1]} -> {target[1]}: up a side)")
    return found


def test_every_framework_module_is_placed_on_a_side() -> None:
    sides = framework_sides()
    names = {part[1] for module in module_imports() if (part := framework_part(module))}
    assert names - set(sides) == set(), "add these modules to docs/architecture.md's sides"


def test_frameworks_import_only_down_their_own_sides_and_iree_backend() -> None:
    assert framework_violations(module_imports(), framework_sides()) == []


def test_the_framework_check_catches_sideways_and_upward_imports() -> None:
    planted = {
        "irprof.frameworks.jax.capture": {"irprof.frameworks.iree.backend"},  # allowed
        "irprof.frameworks.torch.correlate": {"irprof.frameworks.jax.hlo"},  # across frameworks
        "irprof.frameworks.tf.runner": {"irprof.frameworks.tf.correlate"},  # capture -> correlate
        "irprof.frameworks.tf.correlate": {"irprof.frameworks.tf.paths"},  # down: allowed
    }
    assert framework_violations(planted, framework_sides()) == [
        "irprof.frameworks.tf.runner imports irprof.frameworks.tf.correlate "
        "(runner -> correlate: up a side)",
        "irprof.frameworks.torch.correlate imports irprof.frameworks.jax.hlo "
        "(framework torch -> jax)",
    ]


@pytest.mark.parametrize("command", [["-c", "import irprof"], ["-m", "irprof", "--help"]])
def test_import_and_help_load_no_framework(command: list[str]) -> None:
    probe = (
        "import runpy, sys\n"
        f"sys.argv = {['irprof', *command[1:]]!r}\n"
        + ("import irprof\n" if command[0] == "-c" else "")
        + (
            "try:\n    runpy.run_module('irprof', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            if command[0] == "-m"
            else ""
        )
        + "heavy = sorted(m for m in ('tensorflow', 'jax', 'torch', 'xprof') if m in sys.modules)\n"
        "print('loaded:', heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert "loaded: []" in result.stdout, result.stdout + result.stderr
