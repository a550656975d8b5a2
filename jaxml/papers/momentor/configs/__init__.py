"""Experiment configs: `get_config(arg)` files loaded by path (`jaxml.core.config.load_config`)."""
