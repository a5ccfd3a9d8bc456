"""The report's op panels on a real TF capture: each call-site frame is written once per level
(TF records ~60 frames per op, shared by the ops of a layer), each op lists indices into that
table, and they give back the op's chain as `compact_location` reads it from the IR."""

from __future__ import annotations

from irprof.analyses.report_data import build_report_data, compact_location
from irprof.bundle import RunBundle
from irprof.renderers.report_html import report_payload
from tests.analyses.test_support import fixture_tf_bundle  # noqa: F401  (found by its name)


def test_frames_are_written_once_and_indexed(tf_bundle: RunBundle) -> None:
    data = build_report_data(tf_bundle)
    payload = report_payload(data)
    for level, report in zip(payload["levels"], data.levels, strict=True):
        table: list[str] = level["frames"]
        assert len(set(table)) == len(table)  # no frame twice
        chains = {op.index: op.chain for op in report.annotated.profiled.ops}
        shared = 0
        for key, op in level["ops"].items():
            expected = compact_location(chains[int(key)])
            frames = [table[i] for i in op["frames"]]
            assert frames == list(expected.frames)
            assert [table[i] for i in op["user_frames"]] == list(expected.user_frames)
            shared += len(frames)
        # The TF CNN's ops share most of their frames: the table is far shorter than the lists.
        assert shared > 5 * len(table) > 0
