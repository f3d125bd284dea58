"""A checkpoint's config.json from the user's Hugging Face cache or a file the user names: read
bounded, never through a link out of the cache, refused with the file when it is not a config."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from runner.errors import EnvironmentProblem, UsageError, display_path
from runner.knowledge import checkpoints

QWEN = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe"}


def hf_cache(hub: Path, configs: dict[str, object]) -> dict[str, Path]:
    """A Hugging Face hub cache as ``hf download`` leaves it: refs/main names the snapshot, whose
    config.json links to its blob. Returns each repo's folder."""
    folders = {}
    for repo, config in configs.items():
        folder = folders[repo] = hub / ("models--" + repo.replace("/", "--"))
        revision = hashlib.sha1(repo.encode()).hexdigest()
        text = json.dumps(config, indent=2).encode() if not isinstance(config, bytes) else config
        blob = folder / "blobs" / hashlib.sha256(text).hexdigest()
        blob.parent.mkdir(parents=True)
        blob.write_bytes(text)
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text(revision)
        snapshot = folder / "snapshots" / revision
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").symlink_to(Path("..", "..", "blobs", blob.name))
    return folders


def test_the_hub_is_hf_home_s_else_the_home_cache():
    assert checkpoints.hub({"HF_HOME": "/data/hf", "HOME": "/home/u"}) == Path("/data/hf/hub")
    assert checkpoints.hub({"HOME": "/home/u"}) == Path("/home/u/.cache/huggingface/hub")


def test_a_cached_config_is_read_from_the_snapshot_refs_main_names(tmp_path):
    hf_cache(tmp_path, {"Qwen/Qwen3.5-35B-A3B": QWEN})
    assert checkpoints.cached(tmp_path, "Qwen/Qwen3.5-35B-A3B") == QWEN
    assert checkpoints.cached(tmp_path, "Qwen/not-cached") is None


def test_shipped_facts_come_first_then_the_cache_then_the_named_file(tmp_path):
    hf_cache(tmp_path / "hub", {"a/cached": QWEN, "a/shipped": {"model_type": "other"}})
    given = tmp_path / "given.json"
    given.write_text('{"model_type": "glm4_moe_lite"}')
    shipped = {"a/shipped": {"config.json": {"model_type": "qwen3"}}}
    found = checkpoints.answered(
        ["a/cached", "a/shipped", "a/given", "a/unknown"],
        shipped,
        {"a/given": given, "a/cached": given},
        tmp_path / "hub",
    )
    assert found == {
        "a/cached": {"config.json": QWEN},
        "a/given": {"config.json": {"model_type": "glm4_moe_lite"}},
    }


def test_a_link_out_of_the_repo_s_folder_is_refused(tmp_path):
    (folder,) = hf_cache(tmp_path / "hub", {"a/b": QWEN}).values()
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    (config,) = folder.glob("snapshots/*/config.json")
    config.unlink()
    config.symlink_to(secret)
    with pytest.raises(EnvironmentProblem, match=r"config.json: a link out of .*models--a--b"):
        checkpoints.cached(tmp_path / "hub", "a/b")


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"[1, 2]", "config.json: a config.json is a JSON object, not list"),
        (b"{nope", "config.json: not JSON"),
        (b"\xff\xfe", "config.json: not UTF-8 text"),
        (
            b"{" + b" " * checkpoints.MAX_BYTES + b"}",
            f"config.json: larger than {checkpoints.MAX_BYTES} bytes",
        ),
    ],
)
def test_a_cached_file_that_is_no_config_is_refused_with_its_path(tmp_path, content, error):
    hf_cache(tmp_path, {"a/b": content})
    with pytest.raises(EnvironmentProblem) as raised:
        checkpoints.cached(tmp_path, "a/b")
    assert str(raised.value).startswith(f"the Hugging Face cache's {tmp_path}/models--a--b/snapshots/")
    assert error in str(raised.value)


def test_refs_main_that_is_no_commit_is_refused_naming_the_way_out(tmp_path):
    (folder,) = hf_cache(tmp_path, {"a/b": QWEN}).values()
    (folder / "refs" / "main").write_text("../../../../etc")
    with pytest.raises(EnvironmentProblem) as raised:
        checkpoints.cached(tmp_path, "a/b")
    assert str(raised.value) == (
        f"{folder}/refs/main: not a commit hash ('../../../../etc'); fetch a/b again"
        " (hf download a/b config.json) or pass --hf-config REPO=FILE"
    )


def test_a_fifo_in_the_cache_does_not_hang_the_read(tmp_path):
    (folder,) = hf_cache(tmp_path, {"a/b": QWEN}).values()
    (config,) = folder.glob("snapshots/*/config.json")
    config.unlink()
    os.mkfifo(config)
    with pytest.raises(EnvironmentProblem, match=r"config\.json: not a regular file"):
        checkpoints.cached(tmp_path, "a/b")


@pytest.mark.parametrize("repo", ["../x", "a/../../b", "a--b", "a/b/c", "/abs/x"])
def test_a_repo_the_hub_cannot_hold_is_never_looked_up(tmp_path, repo):
    assert checkpoints.cached(tmp_path, repo) is None
    assert checkpoints.answered([repo], {}, {}, tmp_path) == {}


@pytest.mark.parametrize("text", ["no-equals", "=cfg.json", "a/b=", "../a=cfg.json", "a/b/c=f"])
def test_hf_config_that_is_not_repo_equals_file_is_a_usage_error(text):
    with pytest.raises(UsageError) as raised:
        checkpoints.parse_given(text)
    assert str(raised.value) == f"{text!r} is not REPO=FILE (REPO a Hub repo, ORG/NAME; FILE its config.json)"


def test_a_named_file_that_is_missing_is_refused_with_the_option(tmp_path):
    repo, file = checkpoints.parse_given("a/b=missing.json")
    with pytest.raises(EnvironmentProblem) as raised:
        checkpoints.answered([repo], {}, {repo: file}, tmp_path)
    assert str(raised.value) == f"--hf-config a/b={display_path(file)}: no such file"
