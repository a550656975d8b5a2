"""StrokeNUWA: "StrokeNUWA: Tokenizing Strokes for Vector Graphic Synthesis" (Tang et al.; ICML 2024):
SVG to 9-integer rows and back (`svg`), a JAX rasteriser (`raster`), the SVG fixer (`fixer`), real icon
sets with keyword captions (`data`, `tfds_builder`), VQ-Stroke (`vq`), a caption-to-token seq2seq
(`generator`), and experiments `strokenuwa/vqstroke`, `strokenuwa/generate` and `strokenuwa/reproduce`.
"""

from jaxml.papers.strokenuwa import experiments  # noqa: F401  (registers the experiments)
