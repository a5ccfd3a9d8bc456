"""The scope tree as an icicle (a flame graph hanging down): the level on top, each scope below
its parent with a width proportional to its time, the measured rows (ops, fused groups) at the
bottom of each branch. Cells carry their place as fractions (`data-x0`, `data-x1`) so a page
can zoom into one by rescaling; hovering shows the path, time, share and op count.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from irprof.analyses.scope_tree import ScopeNode, ScopeTree
from irprof.renderers.colormap import INFERNO, NO_DATA_FILL, NO_DATA_TEXT
from irprof.renderers.html_page import reveal_bidi
from irprof.renderers.units import format_ns, format_share

WIDTH = 1200
ROW = 24
CHAR = 7.0  # average glyph width at the label size, to fit labels in cells
MAX_CELLS = 4000
MIN_FRACTION = 0.0005  # cells narrower than this share of the root are left out


@dataclass(frozen=True)
class IcicleCell:
    """One drawn node: its id in the SVG, depth and place as fractions of the root's width."""

    id: str
    node: ScopeNode
    depth: int
    x0: float
    x1: float


def icicle_cells(tree: ScopeTree) -> list[IcicleCell]:
    """The nodes drawn, parents first, with ids `c0`, `c1`, ... (the report keys on them)."""
    total = tree.root.total_ns
    if total <= 0:
        return []
    cells: list[IcicleCell] = []
    stack: list[tuple[ScopeNode, int, float]] = [(tree.root, 0, 0.0)]
    while stack and len(cells) < MAX_CELLS:
        node, depth, start = stack.pop()
        width = node.total_ns / total
        cells.append(IcicleCell(f"c{len(cells)}", node, depth, start, start + width))
        offset = start
        placed: list[tuple[ScopeNode, int, float]] = []
        for child in node.children:
            if child.total_ns / total >= MIN_FRACTION:
                placed.append((child, depth + 1, offset))
            offset += child.total_ns / total
        stack.extend(reversed(placed))
    return cells


def cell_title(node: ScopeNode, total_ns: int) -> str:
    """Hover text: what the cell is, its time and share, and its ops."""
    lines = [
        node.path or node.name,
        f"{format_ns(node.total_ns)} ({format_share(node.total_ns / total_ns)})",
    ]
    if node.ops:
        lines.append(
            f"{node.ops} op{'s' if node.ops != 1 else ''}"
            + (f" · {node.op_name}" if node.op_name else "")
        )
    if node.estimated_ns:
        lines.append(f"{format_ns(node.estimated_ns)} an estimated share of fused groups")
    if node.location:
        lines.append(node.location)
    return "\n".join(lines)


def fit_label(text: str, width: float) -> str:
    """`text` cut to what fits `width` (empty when not even a few characters do)."""
    room = int((width - 6) / CHAR)
    if room < 3:
        return ""
    return text if len(text) <= room else text[: room - 1] + "…"


def _colour(node: ScopeNode, share: float) -> tuple[str, str]:
    if node.kind == "unattributed":
        return NO_DATA_FILL, NO_DATA_TEXT
    return INFERNO.hex(share), INFERNO.text_on(share)


@dataclass(frozen=True)
class IcicleSvgRenderer:
    """`scopes.svg`: the scope tree as an icicle."""

    name: str = "icicle-svg"
    extension: str = ".svg"

    def render(self, data: ScopeTree) -> bytes:
        """The SVG document."""
        cells = icicle_cells(data)
        depth = max((cell.depth for cell in cells), default=0) + 1
        height = depth * ROW + 4
        total = data.root.total_ns or 1
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}" class="icicle">',
            "<style>.cell text{font:12px sans-serif;pointer-events:none}"
            ".cell rect{stroke:#fff;stroke-width:1}</style>",
        ]
        for cell in cells:
            x, width = cell.x0 * WIDTH, (cell.x1 - cell.x0) * WIDTH
            fill, ink = _colour(cell.node, cell.node.total_ns / total)
            # The time too when it fits: what the width means, without hovering.
            timed = f"{cell.node.name} · {format_ns(cell.node.total_ns)}"
            label = fit_label(timed, width) if len(timed) * CHAR + 6 <= width else ""
            label = label or fit_label(cell.node.name, width)
            title = escape(reveal_bidi(cell_title(cell.node, total)))
            parts.append(
                # Exact fractions (repr round-trips): a neighbour's start equals this end, so a
                # zoom into this cell does not show a rounding sliver of the next one.
                f'<g class="node cell" id="node-{cell.id}" data-x0="{cell.x0!r}" '
                f'data-x1="{cell.x1!r}" data-label={quoteattr(reveal_bidi(cell.node.name))}>'
                f"<title>{title}</title>"
                f'<rect x="{x:.2f}" y="{cell.depth * ROW}" width="{max(width, 0.5):.2f}" '
                f'height="{ROW - 1}" fill="{fill}"/>'
                f'<text x="{x + 4:.2f}" y="{cell.depth * ROW + 16}" fill="{ink}">'
                f"{escape(reveal_bidi(label))}</text></g>"
            )
        parts.append("</svg>")
        return ("\n".join(parts) + "\n").encode("utf-8")


RENDERER = IcicleSvgRenderer()
