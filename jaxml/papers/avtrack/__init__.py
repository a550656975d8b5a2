"""AVTrack: "Learning Adaptive and View-Invariant Vision Transformer for Real-Time UAV Tracking"
(ICML 2024; code wuyou3474/AVTrack): a one-stream ViT tracker whose Activation Module gates skip blocks per
frame (`model.py`, with `infer` compiling the skips into `lax.cond`), the centre-head and sparsity
losses and the mutual-information view-invariance loss (`losses.py`), the Task of the one loop
(`task.py`), a tracking set of real objects pasted on real video frames plus a hand-annotated real
person (`video.py`, `sequences.py`, `tfds_builder.py`, `pairs.py`), the tracker loop and the
standard one-pass metrics (`crops.py`, `tracker.py`, `metrics.py`, `plots.py`), and experiments
`avtrack/benchmark` and `avtrack/reproduce`.
"""

from jaxml.papers.avtrack import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.avtrack.model import AVTrack, decode_boxes, forward, infer
from jaxml.papers.avtrack.task import AVTrackTask

__all__ = ["AVTrack", "AVTrackTask", "decode_boxes", "forward", "infer"]
