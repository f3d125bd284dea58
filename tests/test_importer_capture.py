"""The import sandbox (harness.py + recorder.py, through capture.record): what is refused, what
is recorded and not done, and what a run reports."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import capture

pytestmark = pytest.mark.allow_subprocess

LAUNCH = """
import miles.utils.external_utils.command_utils as U
U.execute_train(train_args="--lr 1e-6 ", num_gpus_per_node=8, megatron_model_type="glm5-744B-A40B_4layer")
"""


def script(tmp_path: Path, body: str) -> Path:
    tmp_path.chmod(0o755)  # the sandbox reads it as the unprivileged user nobody
    path = tmp_path / "case.py"
    path.write_text(textwrap.dedent(body).lstrip() + LAUNCH)
    return path


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("import os\nos.system('true')\n", "starts a process or sends a signal: os.system (true)"),
        ("import subprocess\nsubprocess.check_output(['ls'])\n", "starts a process: subprocess (ls)"),
        ("import os, signal\nos.kill(1, signal.SIGTERM)\n", "starts a process or sends a signal: os.kill"),
        (
            "import socket\nsocket.socket().connect(('127.0.0.1', 6379))\n",
            "opens a network connection: socket.connect (127.0.0.1 6379)",
        ),
        ("import multiprocessing as m\nm.Process(target=print).start()\n", "starts a process"),
    ],
)
def test_processes_signals_and_the_network_are_refused(tmp_path, body, reason):
    with pytest.raises(SpecError) as error:
        capture.record(script(tmp_path, body), {}, [])
    assert f"case.py cannot be imported: it {reason}" in str(error.value)


def test_a_refusal_cannot_be_swallowed_by_the_script(tmp_path):
    body = "import os\ntry:\n    os.system('true')\nexcept Exception:\n    pass\n"
    with pytest.raises(SpecError, match=r"case.py:3: error \[import\]"):
        capture.record(script(tmp_path, body), {}, [])


def test_file_changes_are_recorded_and_not_done(tmp_path):
    body = f"""
    import os, shutil
    from pathlib import Path
    Path({str(tmp_path / "new.txt")!r}).write_text("x")
    os.makedirs({str(tmp_path / "made")!r})
    (Path({str(tmp_path)!r}) / "keep").mkdir()
    shutil.rmtree({str(tmp_path)!r})
    """
    run = capture.record(script(tmp_path, body), {}, [])
    (written,) = run.prepare  # a whole text file the test writes before launching: a prepare step's
    assert (written.kind, written.command, written.args) == (
        "write",
        str(tmp_path / "new.txt"),
        {"text": "x"},
    )
    assert [note.message.split(":")[0] for note in run.notes] == [
        f"os.makedirs {tmp_path / 'made'}",
        f"os.mkdir {tmp_path / 'keep'}",
        f"shutil.rmtree {tmp_path}",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.py"]


def test_environment_reads_and_switch_values(tmp_path):
    body = """
    import os
    import miles.utils.external_utils.command_utils as U
    FP8 = U.get_bool_env_var("MILES_TEST_USE_FP8_ROLLOUT")
    assert FP8 == (os.environ.get("EXPECTED") == "on")
    OTHER = os.getenv("SOME_KNOB", "1")
    """
    run = capture.record(script(tmp_path, body), {"MILES_TEST_USE_FP8_ROLLOUT": "true", "EXPECTED": "on"}, [])
    assert run.switches == {"MILES_TEST_USE_FP8_ROLLOUT": "true", "EXPECTED": "on"}
    assert [name for name in run.env_reads][:3] == ["MILES_TEST_USE_FP8_ROLLOUT", "EXPECTED", "SOME_KNOB"]
    assert run.env_reads["SOME_KNOB"].line == 5


def test_secrets_enter_the_sandbox_only_as_stand_ins(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "the-real-key")
    body = """
    import os
    assert os.environ["WANDB_API_KEY"] != "the-real-key"
    import miles.utils.external_utils.command_utils as U
    WANDB = U.get_default_wandb_args(__file__)
    """
    run = capture.record(script(tmp_path, body), {}, ["WANDB_API_KEY"])
    assert run.wandb == (
        f"--use-wandb --wandb-project miles-{tmp_path.name}_case --wandb-group run-matrix-import"
        " --wandb-key '${WANDB_API_KEY}' --disable-wandb-random-suffix ",
    )
    assert "the-real-key" not in repr(run)


def test_a_run_reports_the_launch_commands_and_the_calling_function(tmp_path):
    run = capture.record(script(tmp_path, ""), {}, [])
    (call,) = run.calls
    assert call.function == "<module>" and call.at.line == 3
    assert [c.split(" && ")[-1][:16] for c in call.commands] == [
        "pkill -9 sglang;",
        "ray start --head",
        "nvidia-smi topo ",
        "ray job submit -",
    ]
    assert call.args["train_script"] == "train.py" and call.args["extra_env_vars"] is None


def test_commands_after_the_last_launch_are_refused(tmp_path):
    path = script(tmp_path, "")
    path.write_text(path.read_text() + "U.exec_command('rm -rf /root/shared_data/checkpoints')\n")
    with pytest.raises(SpecError) as error:
        capture.record(path, {}, [])
    assert (
        "case.py cannot be imported: it runs `rm -rf /root/shared_data/checkpoints` after its last"
        " execute_train; a spec runs nothing after the launch"
    ) in str(error.value)


def test_each_launch_prepares_with_everything_run_before_it(tmp_path):
    """A script that loops prepare-then-launch over models: each launch's cell runs it all."""
    path = script(tmp_path, "")
    path.write_text(
        LAUNCH.replace("U.execute_train", "U.exec_command('mkdir -p /root/models')\nU.execute_train")
    )
    path.write_text(
        path.read_text() + "U.exec_command('hf download o/b --local-dir /root/models/b')\n" + LAUNCH
    )
    run = capture.record(path, {}, [])
    first, second = ([event.command for event in call.prepare] for call in run.calls)
    assert first == ["mkdir -p /root/models"]
    assert second == ["mkdir -p /root/models", "hf download o/b --local-dir /root/models/b"]
    assert run.prepare == run.calls[0].prepare


def test_ci_registration_is_accepted_and_other_parts_of_miles_are_not(tmp_path):
    run = capture.record(
        script(tmp_path, "from tests.ci.ci_register import register_cuda_ci\nregister_cuda_ci(suite='x')\n"),
        {},
        [],
    )
    assert len(run.calls) == 1
    with pytest.raises(SpecError, match=r"it imports miles\.rollout, which needs miles itself"):
        capture.record(script(tmp_path, "import miles.rollout\n"), {}, [])


def test_reading_what_a_launch_would_write_is_refused_with_that_launch(tmp_path):
    """miles' checkpoint tests resume from the iteration their first launch saved."""
    path = script(tmp_path, "")
    launch = LAUNCH.replace('"--lr 1e-6 "', '"--lr 1e-6 --save /root/ckpt "')
    path.write_text(launch + "open('/root/ckpt/latest_checkpointed_iteration.txt').read()\n")
    with pytest.raises(SpecError) as error:
        capture.record(path, {}, [])
    assert (
        "case.py:4: error [import]: case.py cannot be imported: it reads"
        " /root/ckpt/latest_checkpointed_iteration.txt, which its launch at line 3 would write"
        " (--save /root/ckpt), in code of its own: a spec reads a launch's output only as a check's argument"
        " (verify:, a function of miles' or of the test's, called after its launch), as a later launch's flag"
        " ($${read-integer:PATH}), or in the lines after the launches of a function that launched through"
        " functions of its own (verify: launched_by)"
    ) in str(error.value)


def test_a_temporary_file_the_test_writes_has_the_same_name_in_every_run(tmp_path):
    """miles' sglang_config tests pass a NamedTemporaryFile they wrote: its path and text are the launch's."""
    body = """
    import tempfile
    config = tempfile.NamedTemporaryFile(mode="w", suffix=".yaml", prefix="sglang_config_", delete=False)
    config.write("sglang:\\n  - name: default\\n")
    config.flush()
    """
    path = script(tmp_path, body)
    path.write_text(path.read_text().replace('"--lr 1e-6 "', 'f"--lr 1e-6 --sglang-config {config.name} "'))
    first, second = (capture.record(path, {}, []) for _ in range(2))
    (written,) = first.prepare
    assert written.command.startswith(("/tmp/sglang_config_", "/var/tmp/sglang_config_"))
    assert written.args == {"text": "sglang:\n  - name: default\n"}
    assert first.calls[0].args["train_args"] == second.calls[0].args["train_args"]
    assert f"--sglang-config {written.command}" in first.calls[0].args["train_args"]
    assert first.notes == () and not Path(written.command).exists()


def test_writes_a_spec_cannot_hold_are_notes(tmp_path):
    body = f"""
    open({str(tmp_path / "blob.bin")!r}, "wb").write(bytes(range(256)))
    open({str(tmp_path / "log.txt")!r}, "a").write("appended")
    """
    path = script(tmp_path, body)
    path.write_text(path.read_text() + f"open({str(tmp_path / 'after.txt')!r}, 'w').write('done')\n")
    run = capture.record(path, {}, [])
    assert run.prepare == ()
    assert [note.message for note in run.notes] == [
        f"writes {tmp_path / 'blob.bin'}, which is not text of at most 64 KiB: recorded, not done",
        f"writes {tmp_path / 'log.txt'}: recorded, not done; a spec does not hold it",
        f"writes {tmp_path / 'after.txt'}, which is written after the last launch: recorded, not done",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.py"]


@pytest.mark.parametrize(
    "start",
    [
        "threading.Thread(target=inject_faults, daemon=True).start()",
        "_thread.start_new_thread(inject_faults, ())",
    ],
)
def test_a_thread_of_the_test_s_still_running_at_its_launch_is_refused_with_its_target(tmp_path, start):
    body = f"""
    import _thread, threading
    stop = threading.Event()
    def inject_faults():
        stop.wait()
    {start}
    """
    with pytest.raises(SpecError) as error:
        capture.record(script(tmp_path, body), {}, [])
    assert str(error.value) == (
        f"{tmp_path / 'case.py'}:8: error [import]: case.py cannot be imported: it launches while a thread"
        " of its own runs (inject_faults, started at case.py:5): a spec holds launches and the checks after"
        " them, and code that runs alongside the job only as a function of the test's own that starts it,"
        " a launch.before_submit hook\n  ==> nothing was written"
    )


def test_a_thread_the_standard_library_starts_for_the_test_is_the_test_s(tmp_path):
    body = """
    import threading
    from concurrent.futures import ThreadPoolExecutor
    ThreadPoolExecutor().submit(threading.Event().wait)
    """
    with pytest.raises(
        SpecError, match=r"it launches while a thread of its own runs \(_worker, started at case.py:3\)"
    ):
        capture.record(script(tmp_path, body), {}, [])


def test_a_variable_the_test_sets_by_os_putenv_is_a_note_as_one_set_in_os_environ_is(tmp_path):
    body = """
    import os
    os.putenv("NCCL_DEBUG", "INFO")
    os.environ["NCCL_ALGO"] = "Ring"
    """
    said = (
        " in its own environment, which what it starts inherits (miles' `ray start`): a spec holds the job's"
    )
    said += (
        " env (env:), not the test process's; run starts each cell's Ray head with the GPUs the cell asks for"
    )
    said += " (cluster.gpus_per_node)"
    notes = [note.message for note in capture.record(script(tmp_path, body), {}, []).notes]
    assert [n for n in notes if n.startswith("sets ")] == [
        f"sets NCCL_DEBUG='INFO'{said}",
        f"sets NCCL_ALGO='Ring'{said}",
    ]


def test_threads_of_the_test_s_that_ended_before_its_launch_are_fine(tmp_path):
    body = """
    import threading
    threads = [threading.Thread(target=print) for _ in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    """
    assert len(capture.record(script(tmp_path, body), {}, []).calls) == 1


@pytest.mark.parametrize(
    "listing",
    [
        "sorted(Path(DATA).glob('*.pt'))",
        "list(Path(DATA).rglob('*.pt'))",
        "os.listdir(DATA)",
        "list(os.scandir(DATA + '/sub'))",
        "glob.glob(DATA + '/*.pt')",
        "list(glob.iglob(DATA + '/**', recursive=True))",
        "list(os.walk(DATA))",
        "list(Path(DATA).iterdir())",
    ],
)
def test_listing_a_download_s_folder_is_refused_with_the_repo(tmp_path, listing):
    body = f"""
    import glob, os
    from pathlib import Path
    import miles.utils.external_utils.command_utils as U
    DATA = "/root/datasets/rollouts"
    U.hf_download_dataset("someone/rollouts")
    U.exec_command("hf download --repo-type dataset someone/other --local-dir /root/datasets/other")
    {listing}
    """
    with pytest.raises(SpecError) as error:
        capture.record(script(tmp_path, body), {}, [])
    folder = "/root/datasets/rollouts/sub" if "sub" in listing else "/root/datasets/rollouts"
    assert (
        f"case.py cannot be imported: it lists {folder}, which `hf download someone/rollouts` would have"
        " written: import does not know which files the repo holds" in str(error.value)
    )


def test_a_dataset_download_names_its_repo_not_its_repo_type(tmp_path):
    body = """
    import miles.utils.external_utils.command_utils as U
    U.exec_command("hf download --repo-type dataset someone/other --local-dir /root/datasets/other")
    open("/root/datasets/other/train.jsonl")
    """
    with pytest.raises(SpecError) as error:
        capture.record(script(tmp_path, body), {}, [])
    assert (
        "it reads /root/datasets/other/train.jsonl, which `hf download someone/other` would have written:"
        " import does not know its content (miles/import.yaml checkpoints: has no train.jsonl of"
        " someone/other)" in str(error.value)
    )


def test_a_thread_left_running_after_the_launch_does_not_hold_the_import(tmp_path):
    path = script(tmp_path, "")
    path.write_text(
        path.read_text() + "import threading\nthreading.Thread(target=threading.Event().wait).start()\n"
    )
    assert len(capture.record(path, {}, [], timeout=20).calls) == 1


def test_a_launch_that_names_the_interpreters_version_says_the_node_may_differ(tmp_path):
    path = tmp_path / "case.py"
    tmp_path.chmod(0o755)
    path.write_text(
        "import sys\nimport miles.utils.external_utils.command_utils as U\n"
        "venv = f'/tmp/venv/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages'\n"
        "U.execute_train(train_args='--lr 1e-6 ', num_gpus_per_node=8, megatron_model_type='glm5-744B-A40B_4layer',"
        " extra_env_vars={'PYTHONPATH': venv})\n"
    )
    version = "{}.{}".format(*sys.version_info)
    run = capture.record(path, {}, [])
    assert [note.message for note in run.notes if "interpreter" in note.message] == [
        f"PYTHONPATH names python{version}, the version of the interpreter import ran the script with"
        " (sys.version_info): the spec holds it as written, and on a node whose Python is another version"
        " the path it is part of is another"
    ]
    plain = tmp_path / "plain.py"
    plain.write_text(textwrap.dedent(LAUNCH).lstrip())
    assert not [n for n in capture.record(plain, {}, []).notes if "interpreter" in n.message]


def test_a_trace_the_script_forges_deep_is_a_refusal_not_a_traceback(tmp_path):
    """The script finds the harness's open trace.json, writes a 100,000-deep array there and ends
    before the harness can write the trace (issue 53: a RecursionError while decoding)."""
    tmp_path.chmod(0o755)
    path = tmp_path / "case.py"
    path.write_text(
        "import gc, io, os\n"
        "for thing in gc.get_objects():\n"
        "    if isinstance(thing, io.TextIOWrapper) and str(getattr(thing, 'name', '')).endswith('trace.json'):\n"
        "        thing.write('[' * 100_000 + ']' * 100_000)\n"
        "        thing.flush()\n"
        "os._exit(0)\n"
    )
    with pytest.raises(SpecError) as error:
        capture.record(path, {}, [])
    assert str(error.value) == (
        f"{path}: error [import]: case.py cannot be imported: it left a trace.json that does not parse as"
        " JSON: nests deeper than 100 levels\n  ==> nothing was written"
    )
