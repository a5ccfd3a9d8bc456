"""Chrome async events (`b`/`e` nestable, legacy `S`/`F`) as B/E events on a track of their own.

The spec groups async events by category and id (`id`, or `id2.local`/`id2.global`) into one
tree whose slices nest; they are not on their thread's stack (a thread may start one and
another end it). Each tree becomes a virtual thread of its event's process, named
`async <cat> <id>`, and its events become `B`/`E` events there, paired as every other B/E
(last open first), so that readers, the streaming converter and viewers see ordinary slices.

Phases this reader does not model (object snapshots, samples, marks, legacy async steps `T`/`p`,
clock syncs, memory dumps, or no `ph` at all) are counted and reported in `Trace.warnings`.
"""

from __future__ import annotations

from typing import Any

import msgspec

ASYNC_PREFIX = "async"


def async_thread(cat: str, event_id: Any, id2: msgspec.Raw) -> str:
    """The virtual thread of an async event's tree: its category and id."""
    if event_id is None and len(id2):
        scoped = msgspec.json.decode(id2)
        if isinstance(scoped, dict):
            event_id = scoped.get("local", scoped.get("global"))
    parts = (ASYNC_PREFIX, cat, "" if event_id is None else str(event_id))
    return " ".join(part for part in parts if part)


def unread_phases_warning(counts: dict[str, int]) -> str | None:
    """What `Trace.warnings` says of the events whose phase is not read, or None."""
    if not counts:
        return None
    listed = ", ".join(
        f"{count} '{phase}'" if phase else f"{count} without 'ph'"
        for phase, count in sorted(counts.items())
    )
    return (
        f"{sum(counts.values())} event(s) of phases not read ({listed}); read are "
        "X, B/E, b/e, S/F, i/I/n, C, M and s/t/f"
    )
