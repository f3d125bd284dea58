"""A stand-in miles package for run-matrix import tests."""
