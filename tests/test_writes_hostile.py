"""Attacks on what run-matrix writes: links planted where it writes, disks it cannot write, secrets in
what it writes. Each must end in exit 2/3 with the reason, no traceback, nothing partly written."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
RENDER = "import sys; from runner.cli import main; sys.exit(main(sys.argv[1:]))"


def test_render_refuses_a_link_planted_in_its_output_folder(cli, in_repo, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (out / "nv-glm5-colocate.sh").symlink_to(victim)
    result = cli("render", "nv/glm5-colocate", "-o", str(out))
    assert result.code == 3
    assert f"out/nv-glm5-colocate.sh is a link (to {victim}): run-matrix never writes through a link" in result.err
    assert "Traceback" not in result.err
    assert victim.read_text() == "precious" and victim.stat().st_mode & 0o111 == 0
    assert sorted(p.name for p in out.iterdir()) == ["nv-glm5-colocate.sh"]  # nothing else written


def test_render_to_a_linked_folder_is_refused_unless_force_which_replaces_the_link(cli, in_repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    refused = cli("render", "nv/glm5-colocate", "-o", str(tmp_path / "out"))
    assert refused.code == 3 and "pass --force to replace the link itself" in refused.err
    forced = cli("render", "nv/glm5-colocate", "-o", str(tmp_path / "out"), "--force")
    assert forced.code == 0, forced.err
    assert not (tmp_path / "out").is_symlink() and list(elsewhere.iterdir()) == []
    assert len(list((tmp_path / "out").iterdir())) == 2


def test_render_to_an_impossible_folder_says_why(cli, in_repo):
    result = cli("render", "nv/glm5-colocate", "-o", "/proc/nope")
    assert result.code == 3 and result.err.startswith("run-matrix: cannot write /proc/nope")
    assert "Traceback" not in result.err


def _render(out: Path, limit: int | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    argv = [*prefix, sys.executable, "-c", RENDER, "render", "nv/glm5-colocate", "-o", str(out)]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, preexec_fn=limited, check=False)


@pytest.mark.allow_subprocess
def test_render_under_a_file_size_limit_leaves_nothing_partly_written(tmp_path):
    done = _render(tmp_path / "out", limit=2000)  # each script is several KB
    assert done.returncode == 3, done.stderr
    assert "File too large" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()  # the folder it made goes too


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("options", ["ro", "size=12k"])
def test_render_on_a_read_only_or_full_disk_leaves_nothing_partly_written(tmp_path, options):
    if not shutil.which("unshare") or subprocess.run(["unshare", "-rm", "true"], check=False).returncode:
        pytest.skip("no user and mount namespaces here to mount a small file system in")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = f'mount -t tmpfs -o {options} tmpfs "$1" && shift && exec "$@"'
    done = _render(disk / "out", prefix=("unshare", "-rm", "sh", "-c", script, "sh", str(disk)))
    assert done.returncode == 3, done.stderr
    why = "Read-only file system" if options == "ro" else "No space left on device"
    assert why in done.stderr and "Traceback" not in done.stderr
