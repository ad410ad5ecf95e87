"""Reviewing ground truth: coordinate frames, consensus suspects, corrections, corrected files.

Modules: frames, frame_tables, consensus, corrections, corrected_files. May import: ``verifier``, ``rollouts``, ``runs``.
The names below are the layer's public entry point: other layers and the app import only these.
"""

from .consensus import KINDS, ConsensusSettings, ground_truth_of, instance_keys, suspects, value_text
from .corrected_files import patch_csv, patch_file, patch_json, patch_parquet

__all__ = [
    "ConsensusSettings",
    "KINDS",
    "ground_truth_of",
    "instance_keys",
    "patch_csv",
    "patch_file",
    "patch_json",
    "patch_parquet",
    "suspects",
    "value_text",
]
