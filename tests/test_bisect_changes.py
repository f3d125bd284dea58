"""What changed in a cell's launch from one commit to the next: the preset's flag, the job's env, never
the folder each commit's tree was written to."""

from __future__ import annotations

import pytest

from runner.bisect import attempt, changes
from runner.knowledge.checkout import revisions
from tests import bisect_history as history
from tests import test_run_on_ray as on_ray

specs = on_ray.specs
pytestmark = pytest.mark.allow_subprocess  # git builds the history; the door runs git


def test_what_changed_in_the_launch_is_the_preset_s_flag_not_the_folder_each_commit_was_written_to(
    specs, tmp_path
):
    root = tmp_path / "preset-history"
    ids = history.build(root)
    preset = root / "scripts" / "models" / "glm5-744B-A40B_4layer.sh"
    preset.write_text(preset.read_text().replace("--num-layers 4", "--num-layers 5"))
    history.git(root, "commit", "--quiet", "--all", "-m", "models: a fifth layer (#20)")
    fifth = history.git(root, "rev-parse", "HEAD")
    specs("async")
    checkout = revisions.repository(root)
    launches = []
    for commit in (ids[9], fifth):
        with attempt.tree_of(checkout, commit) as tree:
            launches.append(attempt.planned("m/fake/async.yaml", tree, False))
    found = changes.changes(*launches)
    assert [(d.key, d.a, d.b, d.why) for d in found] == [("--num-layers", "4", "5", changes.PRESET)]
    assert changes.changes(launches[0], launches[0]) == ()
