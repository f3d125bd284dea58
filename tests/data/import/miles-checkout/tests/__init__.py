"""CI helpers."""
