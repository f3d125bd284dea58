"""groups: the script's flags, grouped as the script groups them — by the variables it builds them in.

``train_args`` is usually the concatenation of variables (``ckpt_args``, ``rollout_args``, ...).
Each variable's value is found as a run of whole flags in the launched words. A variable that is
itself a concatenation of others (``common_args = ckpt_args + rollout_args``) is not a group:
its parts are. At each place the longest matching variable wins; words no variable holds are
kept in an unnamed segment (the script wrote them inline). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.importer import shell

Flag = tuple[str, tuple[str, ...]]  # name without --, its values (none for a switch)


@dataclass(frozen=True)
class Segment:
    source: str  # the variable, "" for flags written inline
    flags: tuple[Flag, ...]


def segments(words: Sequence[str], variables: Mapping[str, str]) -> list[Segment]:
    """Split ``words`` into the variables they came from, in order."""
    candidates = _candidates(words, variables)
    found: list[tuple[str, list[str]]] = []
    index = 0
    while index < len(words):
        name, length = _longest(words, index, candidates)
        if length:
            found.append((name, list(words[index : index + length])))
            index += length
            continue
        if not found or found[-1][0] != "":
            found.append(("", []))
        found[-1][1].append(words[index])
        index += 1
    return [Segment(name, tuple(flags(part))) for name, part in found]


def flags(words: Sequence[str]) -> list[Flag]:
    """``--a 1 --b --c x y`` -> ``[(a, (1,)), (b, ()), (c, (x, y))]``."""
    parsed: list[Flag] = []
    for word in words:
        if _is_flag(word):
            parsed.append((word[2:], ()))
        elif parsed:
            name, values = parsed[-1]
            parsed[-1] = (name, (*values, word))
        else:
            raise ValueError(f"{word!r} comes before any flag")
    return parsed


def _candidates(words: Sequence[str], variables: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Variables that hold whole flags, less the whole launch and less concatenations of others."""
    split: dict[str, tuple[str, ...]] = {}
    for name, value in variables.items():
        try:
            tokens = tuple(shell.split(value))
        except ValueError:
            continue
        if tokens and _is_flag(tokens[0]) and tokens != tuple(words) and tokens not in split.values():
            split[name] = tokens
    return {name: tokens for name, tokens in split.items() if not _composite(tokens, split)}


def _composite(tokens: tuple[str, ...], split: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether ``tokens`` is two or more of the other variables back to back."""
    parts = [t for t in split.values() if len(t) < len(tokens)]
    reach = {0: 0}  # position -> fewest parts to get there
    for position in range(len(tokens)):
        if position not in reach:
            continue
        for part in parts:
            end = position + len(part)
            if tuple(tokens[position:end]) == part:
                reach[end] = min(reach.get(end, len(tokens)), reach[position] + 1)
    return reach.get(len(tokens), 0) >= 2


def _longest(words: Sequence[str], index: int, candidates: Mapping[str, tuple[str, ...]]) -> tuple[str, int]:
    best = ("", 0)
    for name, tokens in candidates.items():
        end = index + len(tokens)
        aligned = end == len(words) or (end < len(words) and _is_flag(words[end]))
        if len(tokens) > best[1] and aligned and tuple(words[index:end]) == tokens:
            best = (name, len(tokens))
    return best


def _is_flag(word: str) -> bool:
    return word.startswith("--") and len(word) > 2
