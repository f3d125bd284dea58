"""What the fake train scripts do: check what run-matrix gives them, then log like miles.

Steered by the job's environment (the spec's ``env:``):
  FAKE_MILES_LOGPROB_DIFF   train/train_rollout_logprob_abs_diff at every step (0.077)
  FAKE_MILES_STEP_TIME      perf/step_time at every step (26.0)
  FAKE_MILES_METRICS_FILE   a JSON file {"metric": value}: overrides those metrics at every step,
                            read when the job starts (so runs of one spec can print different values)
  FAKE_MILES_EXIT           exit with this code after step 0, as a failed assert would
  FAKE_MILES_CHATTER        print this many 100-character lines after step 0 (a log that fills a disk)
  FAKE_MILES_SLEEP          sleep this long after step 0 (timeouts, Ctrl-C)
  FAKE_MILES_LOSE_JOB_ONCE  a marker file: when absent, create it and kill the Ray job
                            supervisor that runs us (Ray loses the job: an infrastructure failure)
  FAKE_MILES_MISMATCHES     of the 10 samples written to $MILES_SESSION_VERIFY_METRICS_PATH (when
                            set), how many had a mismatch (0) — what the fake check reads

Checkpoints, as miles' train loop and Megatron keep them (nothing but the folders and the tracker):
with ``--save DIR --save-interval K`` a rollout whose number + 1 is a multiple of K, and the last,
saves ``DIR/iter_<7 digits>/`` and writes the rollout's number to
``DIR/latest_checkpointed_iteration.txt``; ``--ckpt-step N`` loads ``iter_<N>`` of ``--load``
(it must be there, as Megatron's load requires) and says so.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent


def main(script: str) -> None:
    argv = sys.argv[1:]
    problems = check_argv(script, argv) + check_env(argv)
    if problems:
        for problem in problems:
            print(f"fake miles: {problem}", flush=True)
        sys.exit(2)
    print(f"fake miles {script}: {len(argv)} arguments, environment ok", flush=True)
    if "--wandb-key" in argv:
        print(f"wandb: logged in with key {argv[argv.index('--wandb-key') + 1]}", flush=True)
    lose_the_job_once()
    load(argv)
    debug_rollout_data(argv)
    train(int(argv[argv.index("--num-rollout") + 1]), saving(argv))


def model_args() -> list[str]:
    text = (CHECKOUT / "scripts" / "models" / "glm5-744B-A40B_4layer.sh").read_text()
    body = text[text.index("MODEL_ARGS=(") + len("MODEL_ARGS=(") : text.rindex(")")]
    return shlex.split(body, comments=True)


def check_argv(script: str, argv: list[str]) -> list[str]:
    problems = []
    expected = model_args()
    if argv[: len(expected)] != expected:
        problems.append(f"MODEL_ARGS must come first; got {argv[:4]}")
    if script == "train_async.py" and "--colocate" in argv:
        problems.append("train_async.py does not accept --colocate")
    if "--num-rollout" not in argv:
        problems.append("--num-rollout is missing")
    if "--wandb-key" in argv and argv[argv.index("--wandb-key") + 1] != os.environ.get("WANDB_API_KEY"):
        problems.append("--wandb-key is not the caller's WANDB_API_KEY")
    return problems


def check_env(argv: list[str]) -> list[str]:
    problems = [
        f"{name} is not set" for name in ("PYTHONPATH", "MASTER_ADDR", "no_proxy") if name not in os.environ
    ]
    problems += [f"{name}={value!r} was not filled in" for name, value in os.environ.items() if "${" in value]
    if os.environ.get("NCCL_NVLS_ENABLE") not in ("0", "1"):
        problems.append(f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')!r} should be 0 or 1")
    problems += [f"argument {token!r} was not expanded" for token in argv if "${" in token]
    return problems


def lose_the_job_once() -> None:
    marker = os.environ.get("FAKE_MILES_LOSE_JOB_ONCE")
    if not marker or Path(marker).exists():
        return
    Path(marker).write_text("lost once\n")
    shell = os.getppid()  # Ray runs the entrypoint with /bin/sh -c under its JobSupervisor actor
    supervisor = int(Path(f"/proc/{shell}/stat").read_text().rsplit(")", 1)[1].split()[1])
    print(f"fake miles: killing the job supervisor (pid {supervisor})", flush=True)
    os.kill(supervisor, signal.SIGKILL)
    time.sleep(5)
    sys.exit(0)


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def load(argv: list[str]) -> None:
    step, folder = flag(argv, "--ckpt-step"), flag(argv, "--load")
    if step is None:
        return
    if not step.isdigit() or folder is None or not (Path(folder) / f"iter_{int(step):07d}").is_dir():
        print(f"fake miles: --ckpt-step {step}: no iter_ of that step under --load {folder}", flush=True)
        sys.exit(2)
    print(f"fake miles: --ckpt-step {step}: loaded {folder}/iter_{int(step):07d}", flush=True)


def saving(argv: list[str]) -> tuple[Path, int] | None:
    """Where and how often the run saves: --save and --save-interval (miles saves with both)."""
    folder, interval = flag(argv, "--save"), flag(argv, "--save-interval")
    return (Path(folder), int(interval)) if folder and interval else None


def save(to: tuple[Path, int] | None, rollout: int, rollouts: int) -> None:
    if to is None or ((rollout + 1) % to[1] and rollout != rollouts - 1):
        return
    folder, _ = to
    (folder / f"iter_{rollout:07d}").mkdir(parents=True, exist_ok=True)
    (folder / "latest_checkpointed_iteration.txt").write_text(f"{rollout}\n")
    print(f"fake miles: saved {folder}/iter_{rollout:07d}", flush=True)


def debug_rollout_data(argv: list[str]) -> None:
    """``--load-debug-rollout-data PATTERN`` (miles' ``{rollout_id}`` in it): rollout 0's file must be
    there, as miles loads it."""
    pattern = flag(argv, "--load-debug-rollout-data")
    if pattern is None:
        return
    first = Path(pattern.replace("{rollout_id}", "0"))
    if not first.is_file():
        print(f"fake miles: --load-debug-rollout-data {pattern}: no {first}", flush=True)
        sys.exit(2)
    print(f"fake miles: --load-debug-rollout-data {pattern}: loaded {first}", flush=True)


def log(actor: str, line: str) -> None:
    print(f"({actor} pid={os.getpid()}) [2026-05-13 12:00:00] log_utils.py:453 - {line}", flush=True)


def train(rollouts: int, to: tuple[Path, int] | None = None) -> None:
    overrides = {}
    if os.environ.get("FAKE_MILES_METRICS_FILE"):
        overrides = json.loads(Path(os.environ["FAKE_MILES_METRICS_FILE"]).read_text())
    diff = float(overrides.get("train/train_rollout_logprob_abs_diff", os.environ.get("FAKE_MILES_LOGPROB_DIFF", "0.077")))
    step_time = float(overrides.get("perf/step_time", os.environ.get("FAKE_MILES_STEP_TIME", "26.0")))
    for step in range(rollouts):
        log("RolloutManager", f"rollout {step}: {{'rollout/raw_reward': 0.5, 'rollout/response_len': 87.5}}")
        metrics = {
            "train/ppo_kl": 0.0 if step == 0 else 1e-4,
            "train/train_rollout_logprob_abs_diff": diff,
            "train/step": step,
        }
        payload = repr(metrics)[:-1] + ", 'train/grad_norm': nan}"  # miles prints nan as Python does
        log("MegatronTrainRayActor", f"step {step}: {payload}")
        log(
            "MegatronTrainRayActor",
            f"perf {step}: {{'perf/step_time': {step_time}, 'perf/actor_train_tok_per_s': 1234.5}}",
        )
        save(to, step, rollouts)
        if step == 0:
            after_step_0()
    write_session_metrics()
    print("fake miles: training done", flush=True)


def write_session_metrics() -> None:
    path = os.environ.get("MILES_SESSION_VERIFY_METRICS_PATH")
    if not path:
        return
    mismatches = int(os.environ.get("FAKE_MILES_MISMATCHES", "0"))
    with open(path, "w", encoding="utf-8") as out:
        for sample in range(10):
            out.write(json.dumps({"sample": sample, "had_assistant_mismatch": sample < mismatches}) + "\n")


def after_step_0() -> None:
    for number in range(int(os.environ.get("FAKE_MILES_CHATTER", "0"))):
        print(f"chatter {number:06d} " + "x" * 85, flush=True)
    if "FAKE_MILES_SLEEP" in os.environ:
        time.sleep(float(os.environ["FAKE_MILES_SLEEP"]))
    if "FAKE_MILES_EXIT" in os.environ:
        print("AssertionError: train/ppo_kl must be < 1e-8 at step 0 (fake)", flush=True)
        sys.exit(int(os.environ["FAKE_MILES_EXIT"]))
