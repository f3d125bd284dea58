"""Fake miles train_async.py (pipelined; rejects --colocate)."""

import _fake_miles

_fake_miles.main("train_async.py")
