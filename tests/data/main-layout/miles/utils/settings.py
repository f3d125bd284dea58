"""A setting miles reads for itself: no switch of any test."""

import os


def log_level() -> str:
    return os.environ.get("MILES_LIBRARY_LOG_LEVEL", "info")
