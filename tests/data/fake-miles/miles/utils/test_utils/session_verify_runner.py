"""A check of a run's output, with the signature of miles' own (written for run-matrix's tests).

The fake train writes one JSON line per sample to $MILES_SESSION_VERIFY_METRICS_PATH; this check,
run by a spec's ``verify:`` after the job, fails when too many samples had a mismatch.
"""

from __future__ import annotations

import json


def assert_session_verify_metrics(metrics_path: str, *, assistant_text_threshold: float) -> None:
    with open(metrics_path, encoding="utf-8") as lines:
        samples = [json.loads(line) for line in lines if line.strip()]
    if not samples:
        raise AssertionError(f"no per-sample metrics found at {metrics_path}")
    ratio = sum(bool(s.get("had_assistant_mismatch")) for s in samples) / len(samples)
    if ratio > assistant_text_threshold:
        raise AssertionError(f"assistant_text mismatch rate {ratio:.2f} > {assistant_text_threshold}")
    print(f"fake check: {len(samples)} samples, mismatch rate {ratio:.2f}", flush=True)
    # a line in miles' metric format, as a comparison quoting the run's metrics prints: not a sample
    print("(Check pid=1) [2026-05-13 12:00:00] log_utils.py:453 - step 0: {'train/ppo_kl': 99.0}", flush=True)
