"""Self-contained HTML pages: inline assets, data embedded as inert JSON, nothing fetched."""

from __future__ import annotations

import html
from importlib import resources
from typing import Any

import orjson

# Bidirectional controls reorder the text around them: a name holding U+202E can display as a
# different name. Rendered outputs show them as visible `\u202e` escapes instead.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def reveal_bidi(text: str, *, backslash: str = "\\") -> str:
    """`text` with each bidi control replaced by a visible `\\uXXXX` (`backslash` as given)."""
    return text.translate({ord(char): f"{backslash}u{ord(char):04x}" for char in BIDI_CONTROLS})


def asset_text(name: str) -> str:
    """The text of `renderers/assets/<name>` (shipped as package data)."""
    return resources.files("irprof.renderers").joinpath("assets", name).read_text("utf-8")


def json_for_script(data: Any) -> str:
    """JSON safe inside `<script type="application/json">`: no `</script` or `<!--` can end it.

    `<`, `>` and `&` only occur inside JSON strings, where `\\u003c`-style escapes mean the same.
    Bidi controls also only occur inside strings; each becomes the six visible characters
    `\\u202e` (a JSON-escaped backslash), so the page shows the escape, not reordered text.
    """
    try:
        text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits (a forged manifest option): shown as its decimal text.
        text = orjson.dumps(_wide_ints_as_text(data), option=orjson.OPT_NON_STR_KEYS).decode()
    # Inside JSON text the backslash itself is escaped, to survive JSON.parse.
    text = reveal_bidi(text, backslash="\\\\")
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _wide_ints_as_text(data: Any) -> Any:
    """`data` with every integer outside int64 replaced by its decimal string."""
    if isinstance(data, bool):
        return data
    if isinstance(data, int):
        return data if -(2**63) <= data < 2**63 else str(data)
    if isinstance(data, dict):
        return {key: _wide_ints_as_text(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_wide_ints_as_text(value) for value in data]
    return data


def page(*, title: str, data: Any, scripts: tuple[str, ...], styles: tuple[str, ...]) -> str:
    """A complete HTML document; the data is read by the scripts with `JSON.parse`."""
    style_text = "\n".join(asset_text(name) for name in styles)
    script_text = "\n".join(asset_text(name) for name in scripts)
    for text in (style_text, script_text):
        if "</script" in text.lower() or "</style" in text.lower():
            raise ValueError("an inline asset must not contain a closing script/style tag")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # No network: the page may only use what it carries inline.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(reveal_bidi(title))}</title>\n"
        f"<style>\n{style_text}\n</style>\n</head>\n<body>\n"
        '<div id="app"><noscript>This report needs JavaScript.</noscript></div>\n'
        f'<script type="application/json" id="irprof-data">{json_for_script(data)}</script>\n'
        f"<script>\n{script_text}\n</script>\n</body>\n</html>\n"
    )
