"""Every task family's images and instances, each ground-truth point checked to lie inside its image."""

from __future__ import annotations

from .common import LEAF
from .geometry import iter_leaves, leaf_points
from .ground_truth import Bank
from .instances_charts import build_charts
from .instances_diagrams import build_diagrams
from .instances_documents import build_documents
from .instances_shapes import build_shapes
from .instances_tables import build_tables


def build_bank() -> Bank:
    bank = Bank()
    build_shapes(bank)
    build_charts(bank)
    build_tables(bank)
    build_diagrams(bank)
    build_documents(bank)
    for inst in bank.instances:
        w, h = inst["size"]
        for leaf in iter_leaves(inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]):
            for x, y in leaf_points(LEAF[inst["annotation_gt"]["type"]], leaf):
                assert 0 <= x <= w and 0 <= y <= h, (inst["id"], leaf)
    return bank
