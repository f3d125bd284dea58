"""The reference pages of the documentation site, generated from the code so they cannot drift:
every command and option from the argparse parsers (what ``--help`` prints), the exit codes from
``runner/errors.py`` and the rules from the rule registry.

``python tools/docs/reference.py docs`` writes them under ``docs/reference/``; a test fails while
the pages there differ from what the code generates (``tests/test_docs.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runner import cli, errors

WIDTH = 80  # columns of the usage lines shown: they fit the page without scrolling


def pages() -> dict[str, str]:
    """Each generated page: its path under ``docs/``, and its markdown."""
    return {
        "reference/commands.md": commands(),
        "reference/exit-codes.md": exit_codes(),
        "reference/rules.md": rules(),
    }


def commands() -> str:
    top = cli.parser()
    lines = [
        "# Command reference",
        "",
        "Generated from run-matrix's own argument parsers: each command's usage, options, defaults and",
        "help are exactly what `run-matrix COMMAND --help` prints. What the commands are for is in",
        "[Commands](../commands.md).",
        "",
        "```text",
        _formatted(top).format_usage().rstrip(),
        "```",
        "",
        _cell(top.description or ""),
        "",
    ]
    for path, command in _commands(top, ["run-matrix"]):
        lines += _command(path, command)
    return "\n".join(lines) + "\n"


def _commands(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """Every command and subcommand under ``parser``, depth first, in the order ``--help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield [*path, name], sub
                yield from _commands(sub, [*path, name])


def _formatted(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.formatter_class = lambda prog: argparse.RawDescriptionHelpFormatter(prog, width=WIDTH)
    return parser


def _command(path: list[str], parser: argparse.ArgumentParser) -> list[str]:
    lines = [f"## {' '.join(path[1:])}", ""]
    summary = _summary(path)
    if summary:
        lines += [_cell(summary), ""]
    lines += ["```text", _formatted(parser).format_usage().rstrip(), "```", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    rows = [action for action in parser._actions if not isinstance(action, argparse._SubParsersAction)]
    rows = [action for action in rows if action.help != argparse.SUPPRESS and action.dest != "help"]
    if rows:
        lines += ["| argument | default | what it does |", "|---|---|---|"]
        lines += [
            f"| {_cell(_names(action))} | {_cell(_default(action))} | {_cell(_help(action))} |"
            for action in rows
        ]
        lines.append("")
    if parser.epilog:
        lines += ["```text", parser.epilog.strip(), "```", ""]
    return lines


def _summary(path: list[str]) -> str:
    entry = cli.COMMANDS.get(path[1]) if len(path) == 2 else None
    return entry[1] if entry else ""


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    shown = ", ".join(action.option_strings)
    if action.nargs != 0:
        metavar = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper()
        )
        shown += f" {metavar if isinstance(metavar, str) else ' '.join(metavar)}"
    return f"`{shown}`"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, [], ()):
        return ""
    shown = action.default
    if isinstance(shown, (list, tuple)):
        shown = " ".join(map(str, shown))
    return f"`{_relative(str(shown))}`"


def _relative(text: str) -> str:
    """A default inside run-matrix's own tree, as a path from its root (``miles/flags``): the same
    page whatever folder the checkout was cloned into."""
    root = str(Path(cli.__file__).resolve().parents[2])
    return text[len(root) + 1 :] if text.startswith(root + "/") else text


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": "run-matrix"}
    return text


def _cell(text: str) -> str:
    """Text in a markdown table cell or paragraph: one line; outside its code spans a pipe is escaped
    (it would end the cell) and so is ``<`` (``<miles>`` would be read as a tag), inside them neither
    (Python-Markdown keeps a code span's text as written, and its pipes inside the cell)."""
    parts = " ".join(text.split()).split("`")
    for at in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[at] = parts[at].replace("|", "\\|").replace("<", "&lt;")
    return "`".join(parts)


def exit_codes() -> str:
    lines = [
        "# Exit codes",
        "",
        "The same for every command; generated from `runner/errors.py` (`ExitCode`, `MEANINGS`).",
        "",
        "| code | name | meaning |",
        "|---|---|---|",
    ]
    lines += [
        f"| {code.value} | `{code.name}` | {_cell(errors.MEANINGS[code])} |" for code in errors.ExitCode
    ]
    return "\n".join(lines) + "\n"


def rules() -> str:
    from runner import check

    lines = [
        "# Rule reference",
        "",
        "Every rule `validate` runs, generated from the rule registry (`runner/check/`): its id, what it",
        "checks and why, and where the real system enforces it. [Validation rules](../validation.md)",
        "says how problems are reported; rules marked *strict* run under `validate --strict` alone.",
        "",
        "| id | what it checks | source | code |",
        "|---|---|---|---|",
    ]
    for rule in check.documented():
        strict = " *(strict)*" if rule.strict else ""
        anchor = f'<a id="{rule.id.lower()}"></a>'  # rules.md#m3 links to a row
        lines.append(
            f"| {anchor}{rule.id}{strict} | {_cell(rule.checks)} | {_cell(rule.source)} | `{rule.module}` |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/docs/reference.py DIR", file=sys.stderr)
        return 2
    for name, text in pages().items():
        target = Path(argv[0]) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
