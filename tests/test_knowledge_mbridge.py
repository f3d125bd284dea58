"""What import's stand-in for mbridge answers of mbridge's own registry: the shipped model types, for a
checkout whose images pin the mbridge commit they were read at; else why not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.importer.knowledge import knowledge
from runner.knowledge import mbridge
from runner.knowledge.checkout import Tree
from runner.knowledge.checkout.tree import MAX_BYTES

SHIPPED = knowledge().mbridge
COMMIT = SHIPPED.commit
INSTALL = "RUN pip install git+https://github.com/ISEEKYAN/mbridge.git@{} --no-deps\n"


def checkout(tmp_path: Path, dockerfiles: dict[str, str]) -> Tree:
    (tmp_path / "docker").mkdir()
    for name, text in dockerfiles.items():
        (tmp_path / "docker" / name).write_text(text)
    return Tree.at(tmp_path)


def test_without_a_checkout_the_shipped_registry_answers():
    # the recorder stands in for miles dc8b499b, whose images pin the shipped commit
    assert mbridge.answer(None, COMMIT, ["qwen3"]) == {"commit": COMMIT, "registered": ["qwen3"]}


def test_a_checkout_pinning_the_shipped_commit_gets_the_shipped_registry(tmp_path):
    tree = checkout(tmp_path, {"Dockerfile": "FROM x\n" + INSTALL.format(COMMIT), "Dockerfile.rocm": ""})
    assert mbridge.answer(tree, COMMIT, ["qwen3", "llama"]) == {
        "commit": COMMIT,
        "registered": ["qwen3", "llama"],
    }


def test_a_checkout_pinning_another_commit_gets_the_reason(tmp_path):
    tree = checkout(
        tmp_path,
        {"Dockerfile": INSTALL.format(COMMIT), "Dockerfile.rocm": "FROM x\n" + INSTALL.format("0123abcd")},
    )
    assert mbridge.answer(tree, COMMIT, ["qwen3"]) == {
        "unknown": "the checkout's docker/Dockerfile.rocm:2 installs mbridge 0123abcd, and run-matrix ships"
        " the registry of mbridge 89eb1088 only (miles/import.yaml mbridge:)"
    }


def test_a_checkout_pinning_no_commit_gets_the_reason(tmp_path):
    tree = checkout(
        tmp_path, {"Dockerfile": "RUN pip install git+https://github.com/ISEEKYAN/mbridge.git --no-deps\n"}
    )
    assert mbridge.answer(tree, COMMIT, ["qwen3"]) == {
        "unknown": "the checkout's docker/Dockerfile* pin no mbridge commit (`ISEEKYAN/mbridge.git@`), and"
        " run-matrix ships the registry of mbridge 89eb1088 only (miles/import.yaml mbridge:)"
    }


def test_a_dockerfile_too_large_to_read_gets_the_reason(tmp_path):
    tree = checkout(tmp_path, {"Dockerfile": ""})
    os.truncate(tmp_path / "docker" / "Dockerfile", MAX_BYTES + 1)
    assert mbridge.answer(tree, COMMIT, ["qwen3"]) == {
        "unknown": f"its mbridge pin cannot be read: docker/Dockerfile in the checkout at {tmp_path.resolve()}"
        f" holds more than {MAX_BYTES} bytes: not read"
    }


@pytest.mark.parametrize("commit", ["31f1ca96", "dc8b499b"])
def test_both_upstream_trees_pin_the_shipped_commit(upstream_miles, commit):
    assert f"miles {commit} " in " ".join(SHIPPED.pinned_by) + " "
    answered = mbridge.answer(Tree.at(upstream_miles(commit)), COMMIT, SHIPPED.registered)
    assert answered == {"commit": COMMIT, "registered": SHIPPED.registered}


def test_the_shipped_registry_holds_the_types_miles_tests_use_of_mbridge_itself():
    # Qwen3-0.6B and Qwen3-30B-A3B (miles' FT and LoRA tests) have no bridge of miles' own
    assert {"qwen3", "qwen3_moe", "llama", "deepseek_v3"} <= set(SHIPPED.registered)
