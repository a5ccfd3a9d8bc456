"""Splitting a region of several ORT nodes into one piece per kernel, where ORT's names allow.

A region (`graph.runtime_regions`) joins ORT nodes by tensors the source graph never had, so a
chain of kernels that each replaced source nodes (convolutions in NCHWc or NHWC layout, a
QDQ model's QLinearConvs) is one region, and every kernel's measured time would be pooled over
all of its source nodes. ORT names each node it creates after the node or tensor it replaces
(`Graph::GenerateNodeName` appends `_token_<n>`, the NCHWc transformer `_nchwc` to the replaced
output's name, the MatMul + Add fusion `/MatMulAddFusion`), so a kernel whose name extends
exactly one of the region's source nodes' names or output names is *anchored* there. The
names only refine what the structure already decided:

- each anchored kernel gets the source nodes on def-use paths into its anchor's outputs (and
  into the source-named tensors it writes), stopping at the region's inputs and at the other
  anchors' outputs;
- a kernel without an anchor (a layout `Transpose`, `ReorderInput`/`ReorderOutput`) joins the
  one piece it is linked to through ORT's own tensors; between two pieces, an NCHWc
  `ReorderInput` joins the kernel reading it and a `ReorderOutput` the kernel it lays out;
- a join of two anchors' outputs that only it reads (a residual `Add` of two convolutions) goes
  to the anchor whose kernel reads the other's output (ORT's `Sum` input: the add runs in the
  later kernel), with the single-input nodes after it that only it feeds (the `Relu`);
- a source node two pieces both reach (an `Add`, and the `Relu` after it, that ORT fused into
  the convolution before them, which the walks from the convolutions after them both pass)
  belongs to the piece it follows: the only reader of the anchor's output, or of a follower's
  (the condition under which ORT fuses a follower into its producer); when it follows two (a
  residual `Add` of two convolutions), to the one whose kernel reads the other's output (ORT's
  `Sum` input: the add runs in the later kernel); a data-movement node that no rule places (a
  layout `Transpose` ORT optimized away, read by two kernels) has no work to share, and the
  first of them keeps it;
- the split is used only when every kernel finds a piece and the pieces' source nodes are the
  region's, each in exactly one piece; otherwise the region stays whole, shared as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from irprof.frameworks.onnx.work import MOVEMENT

if TYPE_CHECKING:
    from irprof.frameworks.onnx.graph import GraphNode

# What a piece computes: source nodes on def-use paths into `outputs` from the `stop` tensors.
Walk = Callable[[set[str], set[str]], set[str]]


def anchor_names(members: Sequence[GraphNode]) -> dict[str, str | None]:
    """Name or output tensor name -> the member it names (None: it names two members)."""
    named: dict[str, str | None] = {}
    for member in members:
        for key in {member.name, *(name for name in member.outputs if name)}:
            named[key] = member.name if named.get(key, member.name) == member.name else None
    return named


def anchor_of(ort_name: str, named: Mapping[str, str | None]) -> str | None:
    """The member that `ort_name` is, or extends with `_<suffix>` or `/<suffix>` (the longest
    such name)."""
    cut = len(ort_name)
    while cut > 0:
        key = ort_name[:cut]
        if key in named:
            return named[key]
        cut = max(ort_name.rfind("_", 0, cut), ort_name.rfind("/", 0, cut))
    return None


def split_region(
    kernels: Sequence[GraphNode],
    links: Mapping[int, set[int]],
    members: Sequence[GraphNode],
    stop: set[str],
    source_tensors: set[str],
    readers: Mapping[str, int],
    walk: Walk,
) -> list[tuple[list[int], set[str]]] | None:
    """The region's kernels (by position in `kernels`) and source nodes, piece by piece; None
    when the names do not split it consistently. `links`: each kernel's neighbours through
    ORT's own tensors; `stop`: the tensors the region's walk stopped at; `readers`: how many
    source nodes (and graph outputs) read each tensor."""
    named = anchor_names(members)
    by_name = {member.name: member for member in members}
    anchors = {p: anchor_of(kernel.name, named) for p, kernel in enumerate(kernels)}
    pieces: dict[str, list[int]] = {}
    for p, anchor in anchors.items():
        if anchor is not None:
            pieces.setdefault(anchor, []).append(p)
    if len(pieces) < 2:
        return None
    for p, anchor in anchors.items():
        if anchor is None:
            reached = _anchors_reached(p, links, anchors)
            if len(reached) > 1:
                reached = _layout_side(p, kernels, links, anchors)
            if len(reached) != 1:
                return None  # between two pieces, or linked to none: no single home
            pieces[reached.pop()].append(p)
    ends = {name for anchor in pieces for name in by_name[anchor].outputs if name}
    found: dict[str, set[str]] = {}
    for anchor, positions in pieces.items():
        starts = {name for name in by_name[anchor].outputs if name} | {
            name for p in positions for name in kernels[p].outputs if name in source_tensors
        }
        found[anchor] = walk(starts, (stop | ends) - starts)
    claims: dict[str, list[str]] = {}
    for anchor, names in found.items():
        for name in names:
            claims.setdefault(name, []).append(anchor)
    moved = _joins(by_name, pieces, readers, kernels)
    contested = {name for name, claimed in claims.items() if len(claimed) > 1} - set(moved)
    followed = _followers(contested, by_name, pieces, readers)
    for name in contested:
        fused_into = _fused_into(followed.get(name, set()), pieces, kernels)
        if fused_into is None and by_name[name].op_type in MOVEMENT and not by_name[name].domain:
            # No work to place (a layout Transpose ORT optimized away, which the walks of the
            # two kernels reading its value both reach): the first of those kernels keeps it.
            fused_into = min(claims[name], key=lambda anchor: min(pieces[anchor]))
        if fused_into is None:
            return None
        moved[name] = fused_into
    for name, fused_into in moved.items():
        for anchor in claims.get(name, ()):
            found[anchor].discard(name)
        found[fused_into].add(name)
    if set(claims) != set(by_name):
        return None
    return [(sorted(pieces[anchor]), names) for anchor, names in found.items()]


def _sole_readers(by_name: Mapping[str, GraphNode], readers: Mapping[str, int]) -> dict[str, str]:
    """Tensor -> the member that is its only reader."""
    return {
        name: member.name
        for member in by_name.values()
        for name in member.inputs
        if name and readers.get(name, 0) == 1
    }


def _joins(
    by_name: Mapping[str, GraphNode],
    pieces: Mapping[str, list[int]],
    readers: Mapping[str, int],
    kernels: Sequence[GraphNode],
) -> dict[str, str]:
    """Member -> the piece it was fused into, for a join of two anchors' outputs that it alone
    reads (a residual `Add` of two convolutions) when one of their kernels reads the others'
    output (ORT's `Sum` input), and for the single-input nodes after it that alone read what
    it computes (the `Relu` after the `Add`), up to the next anchor. Wherever the walks placed
    them: a join the next kernel's walk reached alone is still the earlier kernel's work."""
    reader_of = _sole_readers(by_name, readers)
    follows: dict[str, set[str]] = {}
    for anchor in pieces:
        outputs = [name for name in by_name[anchor].outputs if name]
        follower = reader_of.get(outputs[0]) if len(outputs) == 1 else None
        if follower is not None and follower not in pieces:
            follows.setdefault(follower, set()).add(anchor)
    moved: dict[str, str] = {}
    for join, anchors in follows.items():
        owner = _fused_into(anchors, pieces, kernels) if len(anchors) > 1 else None
        if owner is None:
            continue
        current: str | None = join
        while current is not None and current not in pieces and current not in moved:
            moved[current] = owner
            outputs = [name for name in by_name[current].outputs if name]
            after = reader_of.get(outputs[0]) if len(outputs) == 1 else None
            single = after is not None and sum(1 for name in by_name[after].inputs if name) == 1
            current = after if single else None
    return moved


def _followers(
    contested: set[str],
    by_name: Mapping[str, GraphNode],
    pieces: Mapping[str, list[int]],
    readers: Mapping[str, int],
) -> dict[str, set[str]]:
    """Contested member -> the anchors it follows: from an anchor, the only reader of its one
    output, then that node's only reader, and so on while they are contested (a residual `Add`
    and the `Relu` after it, fused into the convolution whose output they read)."""
    reader_of = _sole_readers(by_name, readers)
    followed: dict[str, set[str]] = {}
    for anchor in pieces:
        node = by_name[anchor]
        while True:
            outputs = [name for name in node.outputs if name]
            follower = reader_of.get(outputs[0]) if len(outputs) == 1 else None
            if (
                follower is None
                or follower not in contested
                or anchor in followed.get(follower, ())
            ):
                break
            followed.setdefault(follower, set()).add(anchor)
            node = by_name[follower]
    return followed


def _fused_into(
    candidates: set[str], pieces: Mapping[str, list[int]], kernels: Sequence[GraphNode]
) -> str | None:
    """The one candidate a contested member was fused into, or None: the only one, or among
    several (a residual `Add` reading two convolutions) the one whose kernels read every other
    candidate's kernels' output (ORT's `Sum` input: the add runs in the later kernel)."""
    if len(candidates) > 1:
        made = {
            anchor: {name for p in pieces[anchor] for name in kernels[p].outputs if name}
            for anchor in candidates
        }
        read = {
            anchor: {name for p in pieces[anchor] for name in kernels[p].inputs if name}
            for anchor in candidates
        }
        candidates = {
            anchor
            for anchor in candidates
            if all(read[anchor] & made[other] for other in candidates if other != anchor)
        }
    return next(iter(candidates)) if len(candidates) == 1 else None


# ORT's NCHWc layout conversions: which neighbour each one works for (docs/onnx.md).
_CONVERTS_FOR_CONSUMER = "ReorderInput"  # lays a tensor out for the NCHWc kernel reading it
_CONVERTS_FOR_PRODUCER = "ReorderOutput"  # lays an NCHWc kernel's result back out


def _layout_side(
    position: int,
    kernels: Sequence[GraphNode],
    links: Mapping[int, set[int]],
    anchors: Mapping[int, str | None],
) -> set[str]:
    """For an NCHWc layout conversion between two pieces, the anchor of the kernel it converts
    for: a `ReorderInput`'s reader, a `ReorderOutput`'s producer (empty: none, or not one)."""
    kernel = kernels[position]
    outputs = {name for name in kernel.outputs if name}
    inputs = {name for name in kernel.inputs if name}
    if kernel.op_type == _CONVERTS_FOR_CONSUMER:
        sides = [q for q in links.get(position, ()) if outputs & set(kernels[q].inputs)]
    elif kernel.op_type == _CONVERTS_FOR_PRODUCER:
        sides = [q for q in links.get(position, ()) if inputs & set(kernels[q].outputs)]
    else:
        return set()
    found = {anchors[q] for q in sides}
    return {anchor for anchor in found if anchor is not None} if None not in found else set()


def _anchors_reached(
    start: int, links: Mapping[int, set[int]], anchors: Mapping[int, str | None]
) -> set[str]:
    """Anchors of the anchored kernels reached from `start` through kernels without one."""
    reached: set[str] = set()
    pending, seen = [start], {start}
    while pending:
        for other in links.get(pending.pop(), ()):
            if other in seen:
                continue
            seen.add(other)
            anchor = anchors[other]
            if anchor is None:
                pending.append(other)
            else:
                reached.add(anchor)
    return reached
