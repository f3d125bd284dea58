"""functions: the flags a custom function's module adds to miles' parser, read from the checkout."""

from __future__ import annotations

from pathlib import Path

from runner.knowledge.checkout import Tree
from runner.knowledge.flags.functions import read
from runner.knowledge.flags.loaded import Added, named

PLUGINS = Tree.at(Path(__file__).parent / "data" / "custom-flags")
GENERATE = "custom-generate-function-path"


def described(added: Added) -> list[str]:
    return [flag.describe() for flag in added.flags]


def test_an_adder_that_hands_the_parser_to_an_imported_function_adds_both_flags() -> None:
    added = read(PLUGINS, GENERATE, "plugins.agent.generate")
    assert described(added) == [
        "--agent-mode [miles] str choices: fast, careful  (plugins/agent.py:19)",
        "--agent-turns [miles] int  (plugins/base.py:9)",
    ]
    assert added.unread == ""


def test_a_class_adds_the_flags_of_its_bases_classmethod() -> None:
    added = read(PLUGINS, "rollout-function-path", "plugins.rollout.Rollout")
    assert (described(added), added.unread) == (["--rollout-budget [miles] int  (plugins/rollout.py:9)"], "")


def test_a_class_whose_only_base_is_the_standard_librarys_adds_none() -> None:
    assert read(PLUGINS, "rollout-function-path", "plugins.rollout.Plain") == Added(
        "rollout-function-path", "plugins.rollout.Plain", ()
    )


def test_an_adder_made_by_code_is_unread_and_says_where() -> None:
    added = read(PLUGINS, GENERATE, "plugins.opaque.generate")
    assert (added.flags, added.unread) == (
        (),
        "plugins/opaque.py:12: an add_arguments made by code is not read",
    )


def test_a_module_outside_the_checkout_or_a_missing_function_is_unread_with_why() -> None:
    assert read(PLUGINS, GENERATE, "verifiers_rollout.generate").unread == (
        "its module verifiers_rollout is not in the checkout, so it was not read"
    )
    assert read(PLUGINS, GENERATE, "plugins.base.gone").unread == (
        "plugins/base.py defines no gone at its top level"
    )


def test_a_module_path_that_leaves_the_checkout_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "outside.py").write_text("def f(): pass\nf.add_arguments = lambda p: p.add_argument('--x')\n")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "link.py").symlink_to(tmp_path / "outside.py")
    added = read(Tree.at(tmp_path / "tree"), GENERATE, "link.f")
    assert (added.flags, added.unread) == ((), "its module link is not in the checkout, so it was not read")


def test_named_follows_miles_which_functions_it_loads() -> None:
    flags = {"rollout-function-path": "a.rollout", GENERATE: "b.generate"}
    assert named(flags, {}) == (("rollout-function-path", "a.rollout"), (GENERATE, "b.generate"))
    assert named({**flags, "fully-async": True}, {}) == ((GENERATE, "b.generate"),)  # miles' own rollout
    assert named(flags, {"MILES_USE_LEGACY_ROLLOUT_V1": "1"}) == ()  # the v1 path adds no function's flags
    assert named(flags, {"MILES_USE_LEGACY_ROLLOUT_V1": "0"}) == named(flags, {})
    assert named({GENERATE: False}, {}) == ()


def test_miles_mains_session_verify_agent_adds_its_flags_and_its_bases(upstream_miles) -> None:
    tree = Tree.at(upstream_miles("31f1ca96"))
    added = read(tree, GENERATE, "miles.utils.test_utils.session_verify_agent.generate")
    assert added.unread == ""
    assert [(f.name, f.type, f.where.rsplit(":", 1)[0]) for f in added.flags] == [
        ("session-verify-cycles", "int", "miles/utils/test_utils/session_verify_agent.py"),
        ("tool-call-failure-mode", "str", "miles/utils/test_utils/session_verify_agent.py"),
        ("custom-agent-function-path", "str", "miles/rollout/generate_hub/agentic_tool_call.py"),
        ("max-seq-len", "int", "miles/rollout/generate_hub/agentic_tool_call.py"),
    ]
    assert added.flags[1].choices == ("append_tool", "append_user", "rollback")
    router = read(tree, GENERATE, "tests.e2e.sglang.utils.router_equivalence_generate.generate")
    assert router == Added(GENERATE, router.function, ())  # getattr(single_turn.generate, ...): None
