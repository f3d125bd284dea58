from __future__ import annotations

import pytest

from runner.errors import SpecError
from runner.spec.compose import compose
from runner.spec.resolve import resolve


def resolved(write, text: str, **derived):
    return resolve(
        compose(write("spec.yaml", text)), {k: (lambda _, v=v: v) for k, v in derived.items()}
    ).data


def error_of(write, text: str) -> str:
    with pytest.raises(SpecError) as caught:
        resolved(write, text)
    return str(caught.value)


def test_arithmetic_keeps_its_type(write):
    data = resolved(write, "cluster: {gpus_per_node: 8}\nhalf: ${cluster.gpus_per_node // 2}\n")
    assert data["half"] == 4 and isinstance(data["half"], int)


def test_references_inside_text_are_formatted(write):
    data = resolved(
        write, "vars: {root: /root/models}\npath: ${vars.root}/GLM-5_4layer\nl: ['${vars.root}']\n"
    )
    assert data["path"] == "/root/models/GLM-5_4layer"
    assert data["l"] == ["/root/models"]


def test_references_in_a_mapping_inside_a_list_are_resolved_too(write):
    # a verify argument is JSON: [{key: value}] is as much the spec's as a list of text
    text = "vars: {root: /d}\nargs: {x: [['${vars.root}'], {k: '${vars.root}/a', s: '$${HF_TOKEN}'}]}\n"
    assert resolved(write, text)["args"]["x"] == [["/d"], {"k": "/d/a", "s": "${HF_TOKEN}"}]


def test_hyphenated_keys_by_whole_reference_or_index(write):
    data = resolved(
        write,
        """
        args: {misc: {actor-num-gpus-per-node: 4}}
        same: ${args.misc.actor-num-gpus-per-node}
        rest: ${8 - args.misc['actor-num-gpus-per-node']}
    """,
    )
    assert (data["same"], data["rest"]) == (4, 4)


def test_references_chain_through_other_references(write):
    data = resolved(write, "a: ${b + 1}\nb: ${c * 2}\nc: 3\n")
    assert data == {"a": 7, "b": 6, "c": 3}


def test_a_mapping_can_be_referenced_whole(write):
    assert resolved(write, "a: {x: '${b}'}\nb: 1\nc: ${a}\n")["c"] == {"x": 1}


def test_double_dollar_is_a_literal_reference(write):
    assert resolved(write, "key: $${WANDB_API_KEY}\n")["key"] == "${WANDB_API_KEY}"


def test_derived_names(write):
    assert resolved(write, "n: ${profile.gpus_per_node}\n", profile={"gpus_per_node": 8})["n"] == 8


def test_evaluation_is_recorded_in_provenance(write):
    composed = compose(write("spec.yaml", "a: ${b * 2}\nb: 2\n"))
    resolve(composed, {})
    step = composed.provenance[("a",)][-1]
    assert (step.op, str(step.value), step.location.line) == ("resolve", "${b * 2} = 4", 1)


def test_cycle_names_the_chain(write):
    assert error_of(write, "a: ${b}\nb: ${c}\nc: ${a}\n") == (
        "spec.yaml:1: error [reference] a: references form a cycle:"
        " a (spec.yaml:1) -> b (spec.yaml:2) -> c (spec.yaml:3) -> a (spec.yaml:1)\n"
        "  ==> break the cycle with a literal value."
    )


def test_unknown_name_suggests(write):
    assert error_of(write, "cluster: {gpus_per_node: 8}\nx: ${clustr.gpus_per_node}\n") == (
        "spec.yaml:2: error [reference] x: refers to 'clustr', which is not set\n"
        "  ==> did you mean 'cluster'?"
    )


def test_unknown_subkey_suggests(write):
    assert error_of(write, "cluster: {gpus_per_node: 8}\nx: ${cluster.gpus_per_nod}\n") == (
        "spec.yaml:2: error [reference] x: refers to 'cluster.gpus_per_nod', which is not set\n"
        "  ==> did you mean 'gpus_per_node'?"
    )


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "__import__('os').system('true')",
            "cannot evaluate ${__import__('os').system('true')}:"
            " __import__('os').system(...) cannot be called here (functions: int, len, max, min, str)",
        ),
        (
            "a.__class__",
            "cannot evaluate ${a.__class__}: Sorry, access to __attributes  or func_"
            " attributes is not available. (__class__)",
        ),
        ("1 / 0", "cannot evaluate ${1 / 0}: ZeroDivisionError: division by zero"),
        (
            "'a'.ljust(10**9)",
            "cannot evaluate ${'a'.ljust(10**9)}: 'a'.ljust(...) cannot be called here (functions: int, len, max, min, str)",
        ),
        ("{'a': 2}['a']", "cannot evaluate ${{'a': 2}['a']}: Sorry, Dict is not available in this evaluator"),
        ("1 +", "cannot evaluate ${1 +}: SyntaxError: invalid syntax (<unknown>, line 1)"),
    ],
)
def test_nothing_is_eval_ed(write, expression: str, message: str):
    assert (
        error_of(write, f'a: 1\nx: "${{{expression}}}"\n') == f"spec.yaml:2: error [reference] x: {message}"
    )


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("4000000**4000000", "refused ${4000000**4000000}: 4000000**4000000 has more than 64 bits"),
        ("2**64", "refused ${2**64}: an integer of 65 bits (the limit is 64)"),
        ("10**19 * 10**19", "refused ${10**19 * 10**19}: a product of more than 64 bits"),
        ("1 << 100", "refused ${1 << 100}: a shift by 100 bits (the limit is 64)"),
        ("'a' * 10**8", "refused ${'a' * 10**8}: a text of more than 10,000 characters"),
        ("str(2**63) * 1000", "refused ${str(2**63) * 1000}: a text of more than 10,000 characters"),
    ],
)
def test_expressions_have_budgets(write, expression: str, message: str):
    assert error_of(write, f'a: 1\nx: "${{{expression}}}"\n') == f"spec.yaml:2: error [budget] x: {message}"


def test_braces_inside_a_reference_are_matched(write):
    assert resolved(write, "a: 2\nx: \"${ max(a, 1) if '}' else 0 }\"\n")["x"] == 2
    assert error_of(write, "a: 1\nx: 'text ${a + 1'\n") == (
        "spec.yaml:2: error [reference] x: ${ at character 6 is never closed\n"
        "  ==> a reference is ${...}; write $${ for a literal ${"
    )


def test_text_built_from_references_has_a_budget(write):
    doubling = "".join(f"v{i}: '${{v{i - 1}}}${{v{i - 1}}}'\n" for i in range(1, 20))
    assert (
        error_of(write, "v0: abcdefgh\n" + doubling.replace("'", '"'))
        == "spec.yaml:12: error [budget] v11: refused: a text of 16,384 characters (the limit is 10,000)"
    )


def test_an_expression_that_fails_on_a_users_value_is_headlined_at_that_value(write):
    write("base.yaml", "a: 8\nhalf: ${a // 2}\n")
    with pytest.raises(SpecError) as raised:
        resolve(compose(write("spec.yaml", "extends: base.yaml\na: abc\n")), {})
    assert str(raised.value) == (
        "spec.yaml:2: error [reference] a: cannot evaluate ${a // 2}: TypeError: unsupported operand type(s)"
        " for //: 'str' and 'int'\n"
        "  ==> also at base.yaml:2 (half)"
    )
