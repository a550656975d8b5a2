"""Slot Abstractors: "Slot Abstractors: Toward Scalable Abstract Visual Reasoning" (Mondal, Cohen,
Webb; ICML 2024): the slot attention autoencoder, the Abstractor and its ablations, ART's four
tasks built from 100 real Hershey glyphs with ART's held-out split, the two training stages as
Tasks of the one loop, and experiments `slotabs/autoencoder` (stage 1), `slotabs/benchmark`
(held-out-shape accuracy with ablations over seeds, and the scaling with the number of objects) and
`slotabs/reproduce`, and a 3x3 PGM-like task with a held-out attribute regime (`pgm.py`), run by the
benchmark's `pgm` block.
"""

from jaxml.papers.slotabs import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.slotabs.abstractor import Abstractor, TemporalContextNorm, score_candidates
from jaxml.papers.slotabs.shapes import render_strokes, shape_bank, split_shapes
from jaxml.papers.slotabs.slot_attention import SlotAttention, SlotAutoencoder, position_grid
from jaxml.papers.slotabs.tasks import TASKS, Problems, make_count_problems, make_problems, scattered_panels
from jaxml.papers.slotabs.training import (REASONERS, AutoencoderTask, ReasoningTask, encode_problems,
                                           make_reasoner)

__all__ = ["Abstractor", "TemporalContextNorm", "score_candidates", "render_strokes", "shape_bank", "split_shapes",
           "SlotAttention", "SlotAutoencoder", "position_grid", "TASKS", "Problems", "make_problems",
           "make_count_problems", "scattered_panels", "REASONERS",
           "AutoencoderTask", "ReasoningTask", "encode_problems", "make_reasoner"]
