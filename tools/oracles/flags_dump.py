"""Run inside an oracle venv: the real parser's flags, and its verdict on each argv it is given.

    <oracle python> tools/oracles/flags_dump.py sglang|megatron < cases.json > answer.json

cases.json: a list of argv lists. The answer: {"actions": [{"options", "dest", "nargs", "choices",
"type", "takes_value"}], "verdicts": [null (accepted) or the parser's error text, one per case]}.
The parser is the one the program builds: SGLang's ``ServerArgs.add_cli_args`` on a fresh
ArgumentParser, Megatron's ``add_megatron_arguments`` on the parser ``parse_args`` makes
(``allow_abbrev=False``). Only argparse runs; nothing is launched.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


class Rejected(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print and exit; the caller wants the text
        raise Rejected(message)


def build(program: str) -> argparse.ArgumentParser:
    if program == "sglang":
        from sglang.srt.server_args import ServerArgs

        parser = Parser(allow_abbrev=False)  # miles registers these on Megatron's parser, which allows none
        ServerArgs.add_cli_args(parser)
        return parser
    from megatron.training.arguments import add_megatron_arguments

    parser = Parser(allow_abbrev=False)
    return add_megatron_arguments(parser)


def action(each: argparse.Action) -> dict[str, Any]:
    choices = each.choices
    return {
        "options": list(each.option_strings),
        "dest": each.dest,
        "nargs": each.nargs if isinstance(each.nargs, (int, str)) or each.nargs is None else str(each.nargs),
        "choices": None if choices is None else [getattr(c, "name", c) for c in choices],
        "type": getattr(each.type, "__name__", None if each.type is None else str(each.type)),
        "takes_value": each.nargs != 0,
    }


def verdict(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    try:
        parser.parse_args(argv)
    except Rejected as exc:
        return str(exc)
    except (SystemExit, ValueError, KeyError, TypeError) as exc:  # a type= converter that raised
        return f"{type(exc).__name__}: {exc}"
    return None


def main() -> int:
    program = sys.argv[1]
    parser = build(program)
    cases = json.load(sys.stdin)
    answer = {
        "actions": [action(a) for a in parser._actions if a.option_strings and a.dest != "help"],
        "verdicts": [verdict(parser, argv) for argv in cases],
    }
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
