"""runner.knowledge.flags: catalogs read statically from source trees, and the shipped ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.knowledge.flags import load, shipped
from runner.knowledge.flags.catalog import Catalog, Flag
from runner.knowledge.flags.sync import build

TREES = Path(__file__).parent / "data" / "flags"


def catalog(sglang: str) -> Catalog:
    built, report = build(TREES / "miles", TREES / "megatron", TREES / sglang, TREES / "router")
    assert report.unreadable == []
    return built


pytestmark = pytest.mark.allow_subprocess  # build() asks git for each tree's commit


@pytest.fixture(scope="module")
def old() -> Catalog:
    return catalog("sglang-old")


@pytest.fixture(scope="module")
def new() -> Catalog:
    return catalog("sglang-new")


def test_miles_flags_with_types_choices_and_arity(old: Catalog) -> None:
    assert old.lookup("rollout-batch-size") == Flag(
        "rollout-batch-size", "miles", "value", "int", where="miles/utils/arguments.py:21"
    )
    estimator = old.lookup("advantage-estimator")
    assert estimator is not None and estimator.choices == ("grpo", "ppo", "gspo")  # a constant + a list
    temperatures = old.lookup("eval-temperatures")
    assert temperatures is not None and (temperatures.type, temperatures.nargs) == ("float", "+")
    assert old.lookup("colocate") == Flag(
        "colocate", "miles", "switch", "bool", where="miles/utils/arguments.py:23"
    )


def test_reset_arg_keeps_megatrons_definition_and_adds_what_is_missing(old: Catalog) -> None:
    lr, seed = old.lookup("lr"), old.lookup("seed")
    assert lr is not None and lr.program == "megatron"
    assert seed is not None and (seed.program, seed.type, seed.default) == ("miles", "int", 1234)


def test_megatron_dataclass_fields_as_its_argument_factory_builds_them(old: Catalog) -> None:
    backend = old.lookup("attention-backend")
    assert backend is not None and backend.choices == ("flash", "fused", "auto")  # enum member names
    dispatcher = old.lookup("moe-token-dispatcher-type")
    assert dispatcher is not None and dispatcher.choices == ("allgather", "alltoall", "flex")  # Literal
    freq = old.lookup("moe-layer-freq")
    assert freq is not None and (freq.type, freq.nargs) == ("int", "+")
    fusion = old.lookup("disable-bias-activation-fusion")  # a bool defaulting to True: store_false
    assert fusion is not None and (fusion.name, fusion.kind) == ("no-bias-activation-fusion", "switch")
    tp = old.lookup("tensor-model-parallel-size")  # a base class's field
    assert tp is not None and tp.where == "megatron/core/config.py:17"
    assert old.lookup("sequence-parallel") is not None
    assert old.lookup("renamed-flag") is not None and old.lookup("renamed") is None  # argparse_meta
    assert old.lookup("internal-only") is None  # excluded
    assert old.lookup("computed") is None  # init=False


def test_sglang_argparse_form_under_miles_prefixes(old: Catalog) -> None:
    ep = old.lookup("sglang-expert-parallel-size")
    assert ep is not None and ep.name == "sglang-ep-size"  # the ServerArgs field's spelling is canonical
    assert ep.aliases == ("sglang-expert-parallel-size", "sglang-ep")
    assert old.lookup("sglang-model-path") is None and old.lookup("sglang-port") is None  # skipped by miles
    assert old.lookup("eval-sglang-ep-size") is not None
    assert old.lookup("no-eval-sglang-enable-dp-attention") is not None  # inherit: BooleanOptionalAction
    assert old.lookup("no-sglang-enable-dp-attention") is None


def test_sglang_annotated_form(new: Catalog) -> None:
    ep = new.lookup("sglang-ep")
    assert ep is not None and (ep.name, ep.aliases, ep.default) == (
        "sglang-ep-size",
        ("sglang-expert-parallel-size", "sglang-ep"),
        1,
    )
    method = new.lookup("sglang-load-balance-method")
    assert method is not None and method.choices == ("round_robin", "shortest_queue")
    bs = new.lookup("sglang-cuda-graph-bs")
    assert bs is not None and (bs.type, bs.nargs) == ("int", "+")
    switch = new.lookup("sglang-enable-dp-attention")
    assert switch is not None and switch.kind == "switch"
    assert new.lookup("sglang-internal") is None and new.lookup("sglang-not-a-flag") is None
    old_name = new.lookup("sglang-nsa-decode-backend")  # a deprecated spelling of another flag
    assert old_name is not None and old_name.same_as == "sglang-dsa-decode-backend"
    router = new.lookup("router-policy")
    assert router is not None and router.choices == ("random", "cache_aware")


def test_a_catalog_round_trips_through_json(new: Catalog) -> None:
    again = Catalog.from_json(new.to_json())
    assert again.flags == tuple(sorted(new.flags, key=lambda f: (f.program, f.name)))
    assert (again.miles, again.date, again.sources) == (new.miles, new.date, new.sources)


def test_shipped_catalogs_name_their_sources() -> None:
    names = [path.name for path in shipped()]
    assert names == ["2026-05-13-dc8b499b.json", "2026-08-21-31f1ca96.json"]
    for path in shipped():
        data = json.loads(path.read_text())
        assert set(data["sources"]) == {"miles", "megatron", "sglang", "router"}
    main = load(shipped()[-1])
    assert "0.5.16" in main.sources["sglang"] and "Megatron-LM" in main.sources["megatron"]
    assert "0.5.10" in load(shipped()[0]).sources["sglang"]


def test_the_versions_differ_where_the_issue_says() -> None:
    pr, main = (load(path) for path in shipped())
    assert (
        pr.lookup("disable-weights-backuper") is not None and main.lookup("disable-weights-backuper") is None
    )
    for name in ("beta-fast", "beta-slow", "original-max-position-embeddings", "sglang-dsa-decode-backend"):
        assert main.lookup(name) is not None, name
    assert pr.lookup("sglang-dsa-decode-backend") is None
    ep = main.lookup("sglang-expert-parallel-size")
    assert ep is not None and ep.name == "sglang-ep-size"


def test_the_sglang_miles_branchs_own_flags_join_the_catalog_of_their_version() -> None:
    pr, main = (load(path) for path in shipped())
    contract = main.lookup("sglang-true-on-policy-contract")
    assert contract is not None and (contract.program, contract.kind, contract.type) == (
        "sglang",
        "value",
        "str",
    )
    assert contract.where.startswith(
        "sglang-miles branch: miles 31f1ca96 tests/fast/true_on_policy/test_config.py"
    )
    assert "sglang-miles" in main.sources
    assert pr.lookup("sglang-true-on-policy-contract") is None and "sglang-miles" not in pr.sources
    # a spelling the catalog has keeps its own definitions (one per program: miles', FSDP's, Megatron's)
    assert main.extended((Flag("global-batch-size", "sglang", "value"),), ("x", "y")).flags == main.flags


def test_flags_sync_writes_a_catalog_named_by_date_and_commit(cli, tmp_path: Path) -> None:
    result = cli(
        "flags", "sync", "--miles-root", str(TREES / "miles"), "--megatron", str(TREES / "megatron"),
        "--sglang", str(TREES / "sglang-new"), "--router", str(TREES / "router"),
        "--source", "sglang=a test tree", "-o", str(tmp_path),
    )  # fmt: skip
    assert result.code == 0, result.err
    written = tmp_path / "0000-00-00-miles.json"
    assert result.out == f"wrote {written}: 35 flags (megatron 11, miles 8, sglang 15, router 1)\n"
    again = Catalog.from_json(written.read_text())
    assert again.sources["sglang"] == "a test tree"
    assert again.lookup("sglang-ep") is not None


def test_flags_sync_refuses_a_missing_tree(cli, tmp_path: Path) -> None:
    result = cli("flags", "sync", "--miles-root", str(tmp_path / "nope"), "--megatron", ".", "--sglang", ".")
    assert (result.code, result.err) == (
        2,
        f"run-matrix: --miles-root {tmp_path / 'nope'}: no such directory\n",
    )


# names a hostile checkout may give its flags: a command, a newline, a reference, a terminal escape, a space
HOSTILE_NAMES = ("--x$(touch /tmp/x)", "--x\ny", "--x${env:HOME}", "--x\x1b]0;T\x07", "--good", "--a b")


def test_a_checkout_flag_not_named_as_a_flag_is_skipped_and_said_where(tmp_path: Path) -> None:
    import shutil

    from runner.knowledge.flags.sync import Report, miles_flags
    from schemas.values import FLAG_NAME

    root = tmp_path / "miles"
    shutil.copytree(TREES / "miles", root)
    arguments = root / "miles/utils/arguments.py"
    lines = arguments.read_text().splitlines()
    at = lines.index("def add_miles_arguments(parser):") + 1
    added = [f"    parser.add_argument({name!r}, type=int)" for name in HOSTILE_NAMES]
    added.append('    parser.add_argument("--fine-alias", "--x;y", type=int)')  # one bad spelling: all of it
    arguments.write_text("\n".join([*lines[:at], *added, *lines[at:]]) + "\n")
    report = Report()
    names = {spelling for flag in miles_flags(root, report) for spelling in (flag.name, *flag.aliases)}
    assert "good" in names and "rollout-batch-size" in names
    assert not names & {"x", "x;y", "fine-alias"} and all(FLAG_NAME.fullmatch(name) for name in names)
    grammar = "letters, digits, - and _ after the leading --: skipped"
    assert report.misnamed == [
        f"miles/utils/arguments.py:{at + 1 + index}: {name!r} is not a flag name ({grammar})"
        for index, name in enumerate(HOSTILE_NAMES)
        if name != "--good"
    ] + [f"miles/utils/arguments.py:{at + 1 + len(HOSTILE_NAMES)}: '--x;y' is not a flag name ({grammar})"]
