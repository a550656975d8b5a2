"""One loop-trained embedding shared by the catride attack and defence tests (trained once per session)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.core.train import default_config, train_and_evaluate
from jaxml.papers.catride import metric_learning as ml
from jaxml.papers.catride.data import fashion_class_split


@pytest.fixture(scope="session")
def catride_trained(tmp_path_factory):
    """An embedding trained 120 steps of 32 pairs on 200 images per class of classes 0-4: its jitted
    `embed`, 24 `queries` and the `gallery` embeddings of the 300 retrieval images (classes 5-9) with
    their `labels`, `params`, the `task`, the training and held-out images, the `untrained` params
    and the loop's final `metrics`."""
    from jaxml.data import fashion_mnist
    from jaxml.papers.catride.data import class_split

    xtr, ytr, xte, yte = fashion_class_split(train_per_class=200, test_per_class=60)
    # held-out images of the training classes, for the loop's evaluation
    images, labels = fashion_mnist.read_raw("test")
    xval, yval = class_split(images[..., None], labels.astype(np.int32), (0, 1, 2, 3, 4), per_class=100)
    task = ml.MetricTask(ml.EmbeddingNet(dim=32, features=(8, 16), hidden=64), ml.PairSource(xtr, ytr),
                         {"test": ml.PairSource(xval, yval)})
    config = default_config()
    config.update(num_steps=120, batch_size=32, eval_batch_size=200, checkpoint_every_steps=120, log_every_steps=60)
    untrained = task.init(jax.random.PRNGKey(0), task.train_source[np.arange(2)])
    outcome = train_and_evaluate(config, tmp_path_factory.mktemp("catride"), task=task)
    params = outcome.state.params
    embed = jax.jit(lambda x: task.model.apply({"params": params}, x))
    images = xte.astype(np.float32) / 255.0
    return dict(embed=embed, queries=images[:24], gallery=np.asarray(embed(jnp.asarray(images))), labels=yte,
                params=params, task=task, xtr=xtr, ytr=ytr, xval=xval, yval=yval, untrained=untrained,
                metrics=outcome.metrics)
