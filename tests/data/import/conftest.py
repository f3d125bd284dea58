"""The scripts here are miles-shaped test scripts for `run-matrix import`, not tests of run-matrix."""

collect_ignore_glob = ["*.py"]
