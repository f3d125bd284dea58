"""Fake miles train.py (synchronous; the only train script that accepts --colocate)."""

import _fake_miles

_fake_miles.main("train.py")
