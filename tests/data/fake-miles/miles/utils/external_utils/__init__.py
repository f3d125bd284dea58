"""Helpers for launching jobs and tests."""
