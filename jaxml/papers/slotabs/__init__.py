"""Slot Abstractors: "Slot Abstractors: Toward Scalable Abstract Visual Reasoning" (Mondal, Cohen,
Webb; ICML 2024). In progress (issue 24): the slot attention autoencoder, the Abstractor and its
ablations, ART's four tasks built from 100 real Hershey glyphs with ART's held-out split, the two
training stages as Tasks of the one loop, and experiment `slotabs/autoencoder` (stage 1). The
reasoning benchmark, the object-count scaling and the PGM-like task are still to come.
"""

from jaxml.papers.slotabs import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.slotabs.abstractor import Abstractor, TemporalContextNorm, score_candidates
from jaxml.papers.slotabs.shapes import render_strokes, shape_bank, split_shapes
from jaxml.papers.slotabs.slot_attention import SlotAttention, SlotAutoencoder, position_grid
from jaxml.papers.slotabs.tasks import TASKS, Problems, make_problems
from jaxml.papers.slotabs.training import (REASONERS, AutoencoderTask, ReasoningTask, encode_problems,
                                           make_reasoner)

__all__ = ["Abstractor", "TemporalContextNorm", "score_candidates", "render_strokes", "shape_bank", "split_shapes",
           "SlotAttention", "SlotAutoencoder", "position_grid", "TASKS", "Problems", "make_problems", "REASONERS",
           "AutoencoderTask", "ReasoningTask", "encode_problems", "make_reasoner"]
