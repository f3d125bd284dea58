"""The pydantic models of run-matrix's YAML files, and their JSON Schema.

``Spec`` is a resolved spec (one cell); ``HardwareProfileFile`` a file of
``matrices/hardware/``, ``HardwareProfile`` one with a software stack chosen (what a cell sees);
``ModelPreset`` a file of ``miles/models/``;
``LaunchConventions`` is ``miles/launch/<date>-<commit8>.yaml``.

These modules do without ``from __future__ import annotations``: pydantic builds a model the first
time it is used (``defer_build``), and a field annotated by a string costs a ``ForwardRef`` (a
``compile`` and an ``eval``) each time, a tenth of a cold ``validate``. Only a name not yet defined is
quoted.
"""

from schemas.conventions import LaunchConventions
from schemas.hardware import HardwareProfile, HardwareProfileFile
from schemas.preset import ModelPreset
from schemas.spec import GROUPS, Args, Group, Spec

__all__ = [
    "GROUPS",
    "Args",
    "Group",
    "HardwareProfile",
    "HardwareProfileFile",
    "LaunchConventions",
    "ModelPreset",
    "Spec",
]
