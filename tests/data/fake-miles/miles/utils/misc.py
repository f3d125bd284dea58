"""Running shell commands, for real."""

import subprocess


def exec_command(cmd: str, capture_output: bool = False) -> str | None:
    print(f"EXEC: {cmd}", flush=True)
    done = subprocess.run(["bash", "-c", cmd], check=True, capture_output=capture_output, text=True)
    return done.stdout if capture_output else None
