"""Markdown for people to paste (PR descriptions, step summaries): text made safe in a table cell."""

from __future__ import annotations


def escape(text: str) -> str:
    """No column break (``|``), no row break (a newline), a backslash kept as one."""
    return (
        text.replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("\r\n", " ")
        .replace("\r", " ")
        .replace("\n", " ")
    )
