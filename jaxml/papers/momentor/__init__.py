"""Momentor (Qian et al., ICML 2024) in JAX: the Temporal Perception Module (continuous temporal
tokens: interpolated inputs, soft targets, neighbouring token propagation, temporal infusion), a
video LLM trained here in Momentor's three stages, a small Moment-10M-style data engine over real
clips, and the evaluation (temporal grounding, dense captioning, highlight detection).

    from jaxml.papers.momentor import tpm
    p = tpm.position(12.5, 40.0, 300)               # continuous token position
    e = tpm.interpolate(E_in, p)                    # its input embedding
"""

from jaxml.papers.momentor import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.momentor.engine import Event, Example, Time, Video, make_examples, make_video, make_videos
from jaxml.papers.momentor.metrics import dense_caption_metrics, grounding_metrics, highlight_metrics, temporal_iou
from jaxml.papers.momentor.model import MomentorTask, ModelSpec, generate
from jaxml.papers.momentor.tpm import (ENCODINGS, decode_position, interpolate, position, propagate, seconds,
                                       soft_targets)
