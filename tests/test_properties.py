"""Properties, checked by hypothesis: quoting round-trips, matrices count right, merges merge."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.compose import compose
from runner.errors import Location
from runner.matrix import cell_id, expand
from runner.shell import quote
from schemas.matrix import Matrix

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
references = names.map(lambda n: "${" + n.upper() + "}")
texts = st.lists(st.one_of(st.text(min_size=0, max_size=8), references), max_size=4).map("".join)


@given(texts)
def test_quoted_tokens_split_back_to_themselves(text: str) -> None:
    assert shlex.split(quote(text)) == [text]


@given(st.dictionaries(names, st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True), max_size=4))
def test_the_product_has_one_cell_per_combination_with_unique_ids(axes: dict[str, list[int]]) -> None:
    matrix = Matrix(axes=axes)
    combos = expand(matrix, lambda key: Location(Path("spec.yaml")))
    assert len(combos) == math.prod(len(values) for values in axes.values())
    assert len({cell_id("s", combo, matrix) for combo in combos}) == len(combos)


keys = names.filter(lambda name: name not in ("extends", "why"))  # reserved by compose
scalars = st.one_of(st.integers(-5, 5), st.booleans(), names)
trees = st.recursive(
    scalars, lambda inner: st.dictionaries(keys, inner, min_size=1, max_size=3), max_leaves=8
)


def merged(base: object, over: object) -> object:
    """The merge rule, stated plainly: maps merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: merged(base[k], v) if k in base else v for k, v in over.items()}}
    return over


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(keys, trees, max_size=4), st.dictionaries(keys, trees, max_size=4))
def test_extends_merges_as_stated(tmp_path_factory, base: dict, over: dict) -> None:
    folder = tmp_path_factory.mktemp("merge")
    (folder / "base.yaml").write_text(yaml.safe_dump(base))
    (folder / "over.yaml").write_text(yaml.safe_dump({**over, "extends": "base.yaml"}))
    assert compose(folder / "over.yaml").data == merged(base, over)
