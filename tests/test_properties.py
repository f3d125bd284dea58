"""Properties, checked by hypothesis: quoting round-trips, matrices count right, merges merge."""

from __future__ import annotations

import contextlib
import io
import math
import shlex
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cells.matrix import cell_id, expand
from runner.cli import main
from runner.errors import Location
from runner.launch.shell import quote
from runner.spec.compose import compose
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


_ROCM = Path(__file__).resolve().parents[1] / "matrices" / "rocm" / "glm5-async.yaml"
_KEYS = [key for key in compose(_ROCM).provenance if key[0] not in ("requires", "expect", "prepare")]
_EXPRESSIONS = st.sampled_from(
    [
        "cluster.gpus_per_node // 0",
        "10**30",
        "'a' * 10**6",
        "args.misc['actor-num-gpus-per-node'] * 3",
        "{'a': 1}",
        "max(1, 'a')",
        "nope.nope",
        "cluster",
        "visible_devices",
        "-1",
    ]
)
_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.text(max_size=12),
        _EXPRESSIONS.map(lambda text: "${" + text + "}"),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=3)),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_KEYS), _VALUES), min_size=1, max_size=3))
def test_a_mistaken_overlay_is_an_error_never_a_traceback(tmp_path: Path, changes) -> None:
    """Any value at any key of the ROCm spec: every command answers 0 or 2, with no exception."""
    overlay: dict[str, object] = {"extends": str(_ROCM)}
    for key, value in changes:
        node = overlay
        for name in key[:-1]:
            child = node.get(name)
            if child is None:  # absent, or set to null by an earlier change: a mapping from here on
                node[name] = child = {}
            node = child if isinstance(child, dict) else {}
        node[key[-1]] = value
    spec = tmp_path / "overlay.yaml"
    spec.write_text(yaml.safe_dump(overlay))
    for argv in (["validate", str(spec)], ["render", str(spec)], ["explain", str(spec), "--layout"]):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(argv) in (0, 2), argv
