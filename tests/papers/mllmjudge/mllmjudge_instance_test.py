"""The offline MLLM-as-a-Judge instance: determinism, split disjointness, labels against pixels,
answers of known quality against the scene's facts, gold labels against qualities, and the
write/read round trip in the release's format."""

import collections
import functools

import numpy as np
import pytest

from jaxml.papers.mllmjudge import formats
from jaxml.papers.mllmjudge import instance as inst_mod
from jaxml.papers.mllmjudge.instance import (BACKGROUNDS, CLIP_CAPTIONS, ICON_NAMES, IMAGE_SIZE, OBJECT_NAMES,
                                             QUADRANTS, QUALITIES, QUALITY_SCORES, SOURCES, TIE_NAME)


@functools.lru_cache(maxsize=None)
def _instance(split="test", n=10, seed=0, tie_rate=0.2):
    return inst_mod.build_instance(split, n, seed=seed, tie_rate=tie_rate)


def _items(inst):
    return inst.score, inst.pair, inst.batch


# ------------------------------------------------------------------------------------ vocabulary


def test_fixed_texts_name_no_object():
    assert len(set(OBJECT_NAMES)) == len(OBJECT_NAMES)
    assert set(CLIP_CAPTIONS) == set(BACKGROUNDS[1:]) and BACKGROUNDS[0] == "plain"
    texts = (list(CLIP_CAPTIONS.values()) + list(inst_mod._REFUSALS) + list(inst_mod._UNRELATED)
             + list(inst_mod._PREFIXES) + list(inst_mod._SUFFIXES) + list(inst_mod._HALVES.values()))
    for text in texts:
        assert inst_mod.mentioned_objects(text) == [], text
        assert inst_mod.mentioned_quadrants(text) == [], text
    # "t-shirt" is not also a "shirt"; "ankle boot" is one name.
    assert inst_mod.mentioned_objects("A T-shirt, a shirt and an ankle boot near the address.") == \
        ["t-shirt", "shirt", "ankle boot"]


def test_every_icon_renders_a_stroke_drawing():
    for name in ICON_NAMES:
        alpha = inst_mod.render_icon(name, 28)
        assert alpha.shape == (28, 28) and alpha.dtype == np.float32
        assert 0.0 <= alpha.min() and alpha.max() <= 1.0
        coverage = float(alpha.mean())
        assert 0.08 < coverage < 0.6, (name, coverage)  # strokes, not a blank or a filled square
    with pytest.raises(ValueError, match="unknown icon 'spaceship'"):
        inst_mod.render_icon("spaceship")


# ---------------------------------------------------------------------------------- determinism


def test_same_seed_same_instance_and_other_seed_differs():
    a, b = _instance(), inst_mod.build_instance("test", 10, seed=0)
    assert a.scenes == b.scenes
    assert _items(a) == _items(b)
    assert a.images.keys() == b.images.keys()
    assert all(np.array_equal(a.images[k], b.images[k]) for k in a.images)
    c = inst_mod.build_instance("test", 10, seed=1)
    assert sum(not np.array_equal(a.images[k], c.images[k]) for k in a.images) > len(a.images) // 2
    assert [it.answer for it in a.score] != [it.answer for it in c.score]
    # Scene i of a source does not depend on how many scenes were asked for.
    small = inst_mod.make_scenes("test", 3)
    assert [s for s in a.scenes if int(s.image_id[-4:]) < 3] == small


def test_scene_fields():
    inst = _instance()
    assert [s.source for s in inst.scenes] == [src for src in SOURCES for _ in range(10)]
    assert len({s.image_id for s in inst.scenes}) == len(inst.scenes)
    for s in inst.scenes:
        assert s.image.shape == (IMAGE_SIZE, IMAGE_SIZE, 3) and s.image.dtype == np.uint8
        assert 1 <= len(s.objects) <= 3
        quads = [q for _, q in s.objects]
        assert quads == sorted(quads, key=QUADRANTS.index) and len(set(quads)) == len(quads)
        assert len({n for n, _ in s.objects}) == len(s.objects)
        names = {n for n, _ in s.objects}
        assert names <= set(ICON_NAMES if s.source == "icons" else inst_mod.FASHION_NAMES)
        if s.source == "frames":
            assert s.background in CLIP_CAPTIONS and s.background_caption == CLIP_CAPTIONS[s.background]
        else:
            assert (s.background, s.background_caption, s.frame_index) == ("plain", "", -1)


# --------------------------------------------------------------------------------------- splits


def test_splits_are_disjoint():
    from jaxml.data import fashion_mnist
    train_images, train_labels = fashion_mnist.read_raw("train")
    test_images, test_labels = fashion_mnist.read_raw("test")
    test_bytes = {x.tobytes() for x in test_images}
    train = inst_mod.make_scenes("train", 30, seed=3)
    test = inst_mod.make_scenes("test", 30, seed=3)
    used = 0
    for scenes, images, labels in ((train, train_images, train_labels), (test, test_images, test_labels)):
        for s in scenes:
            assert len(s.fashion_indices) == len(s.objects)
            for (name, _), index in zip(s.objects, s.fashion_indices):
                if s.source == "icons":
                    assert index == -1
                    continue
                assert inst_mod.FASHION_NAMES[labels[index]] == name
                np.testing.assert_array_equal(inst_mod.fashion_item(s.split, index), images[index])
                if scenes is train:
                    assert images[index].tobytes() not in test_bytes
                    used += 1
    assert used > 40
    for s in train + test:
        if s.source != "frames":
            continue
        clip = inst_mod._CLIPS[s.background]
        cut = int(round(clip.num_frames * inst_mod.TRAIN_FRACTION))
        if s.split == "train":
            assert clip.first <= s.frame_index < cut
        else:
            assert cut <= s.frame_index < clip.num_frames


# ------------------------------------------------------------------------------ labels / pixels


def test_labels_and_captions():
    scenes = _instance().scenes
    labels = inst_mod.scene_labels(scenes)
    assert labels["quadrants"].shape == (len(scenes), 4) and labels["quadrants"].dtype == np.int32
    assert labels["background"].dtype == np.int32 and labels["source"].dtype == np.int32
    for row, bg, src, s in zip(labels["quadrants"], labels["background"], labels["source"], scenes):
        assert [(OBJECT_NAMES[k - 1], q) for k, q in zip(row, QUADRANTS) if k] == list(s.objects)
        assert BACKGROUNDS[bg] == s.background and SOURCES[src] == s.source
        caption = inst_mod.scene_caption(s)
        assert caption == inst_mod.caption_from_labels(row, int(bg))
        assert inst_mod.mentioned_objects(caption) == [n for n, _ in s.objects]
        assert inst_mod.mentioned_quadrants(caption) == [q for _, q in s.objects]
        assert s.background_caption in caption
    assert inst_mod.caption_from_labels(np.array([8, 0, 0, 9]), 0) == \
        "A sneaker at the top left and a bag at the bottom right, on a plain background."
    assert inst_mod.caption_from_labels([0, 0, 0, 0], 0) == "Nothing but a plain background."
    with pytest.raises(ValueError, match="quadrants_row"):
        inst_mod.caption_from_labels([0, 0, len(OBJECT_NAMES) + 1, 0], 0)
    with pytest.raises(ValueError, match="background_index"):
        inst_mod.caption_from_labels([1, 0, 0, 0], len(BACKGROUNDS))


def test_quadrant_labels_match_pixels():
    checked = 0
    for s in _instance().scenes:
        if s.background != "plain":
            continue
        img = s.image.astype(np.int32)
        occupied = {q for _, q in s.objects}
        empty = [q for q in QUADRANTS if q not in occupied]
        y, x = inst_mod._QUADRANT_ORIGIN[empty[0]]
        bg = img[y, x]
        differs = np.any(img != bg, axis=-1)
        for q in QUADRANTS:
            y, x = inst_mod._QUADRANT_ORIGIN[q]
            block = differs[y:y + 32, x:x + 32]
            if q in occupied:
                assert block.sum() >= 30, (s.image_id, q, block.sum())  # a visible object
            else:
                assert not block.any(), (s.image_id, q)  # nothing leaks into an empty quadrant
        checked += 1
    assert checked == 20
    # Frames: the scene's frame crop shows around the objects (not a flat colour).
    for s in _instance().scenes:
        if s.source == "frames":
            assert s.image.reshape(-1, 3).std(axis=0).max() > 5


# -------------------------------------------------------------------------------------- answers


def _facts(scene):
    return [n for n, _ in scene.objects], [q for _, q in scene.objects]


def test_answers_have_their_known_quality():
    inst = _instance("test", 14)
    seen = collections.Counter()
    for scene, question, answers in zip(inst.scenes, inst.questions, inst.answers):
        names, quads = _facts(scene)
        present, n = set(names), len(names)
        target_q = dict(scene.objects).get(question.target)
        seen[question.type] += 1
        assert set(answers) == set(QUALITIES) | {TIE_NAME}
        assert answers["correct"] != answers[TIE_NAME]
        for name in ("correct", TIE_NAME):
            text = answers[name]
            said = inst_mod.mentioned_objects(text)
            assert set(said) <= present, text
            if question.type == "what":
                assert sorted(said) == sorted(names), text
                assert set(inst_mod.mentioned_counts(text)) <= {n}, text
            elif question.type == "describe":
                assert said == names and inst_mod.mentioned_quadrants(text) == quads, text
                assert scene.background_caption in text
            elif question.type == "where":
                assert said == [question.target] and inst_mod.mentioned_quadrants(text) == [target_q], text
            else:
                assert said == [] and inst_mod.mentioned_counts(text) == [n], text

        text = answers["incomplete"]  # true, but something asked for is missing
        said = inst_mod.mentioned_objects(text)
        assert set(said) <= present, text
        if question.type == "what":
            assert len(set(said)) < n or not said, text
        elif question.type == "describe":
            has_background = (scene.background_caption in text if scene.background_caption
                              else "background" in text or "backdrop" in text)
            missing = len(set(said)) < n or not inst_mod.mentioned_quadrants(text) or not has_background
            assert missing, text
            assert all(q == dict(scene.objects)[m] for m, q in zip(said, inst_mod.mentioned_quadrants(text)))
        elif question.type == "where":
            assert said == [question.target] and inst_mod.mentioned_quadrants(text) == [], text
        else:
            assert said == [] and n not in inst_mod.mentioned_counts(text), text

        text = answers["partly_wrong"]  # exactly one fact wrong
        said, where = inst_mod.mentioned_objects(text), inst_mod.mentioned_quadrants(text)
        if question.type == "count":
            assert said == [] and len(inst_mod.mentioned_counts(text)) == 1
            assert abs(inst_mod.mentioned_counts(text)[0] - n) == 1 and inst_mod.mentioned_counts(text)[0] >= 1
        elif question.type == "where":
            assert said == [question.target] and len(where) == 1 and where[0] != target_q, text
        elif question.type == "what":
            assert len(said) == n and len(set(said) - present) == 1 and len(present - set(said)) == 1, text
        else:
            assert len(said) == n and len(where) == n, text
            diffs = [(a != b) + (c != d) for a, b, c, d in zip(said, names, where, quads)]
            assert sorted(diffs) == [0] * (n - 1) + [1], text
            assert len(set(said) - present) <= 1

        text = answers["hallucinated"]  # the correct content plus 1-2 absent objects
        said = set(inst_mod.mentioned_objects(text))
        extra = said - present
        assert 1 <= len(extra) <= 2, text
        assert (said & present) == (present if question.type in ("what", "describe") else
                                    {question.target} if question.type == "where" else set()), text

        assert not set(inst_mod.mentioned_objects(answers["off_topic"])) & present, answers["off_topic"]
    assert all(seen[t] > 0 for t in inst_mod.QUESTION_TYPES), seen


def test_wording_does_not_give_the_quality_away():
    inst = _instance("test", 14)
    firsts = collections.defaultdict(set)
    for answers in inst.answers:
        for name, text in answers.items():
            firsts[name].add(text.split()[0])
    # Several openings per quality, and the correct answers' openings are shared by wrong ones.
    assert all(len(firsts[q]) >= 3 for q in QUALITIES)
    assert firsts["correct"] & firsts["partly_wrong"] and firsts["correct"] & firsts["hallucinated"]


# ---------------------------------------------------------------------------------- gold labels


def test_gold_labels_follow_the_qualities():
    inst = _instance("test", 10, tie_rate=0.5)
    n_scenes = len(inst.scenes)
    assert len(inst.score) == 5 * n_scenes and len(inst.batch) == n_scenes
    assert len({it.score_id for it in inst.score}) == len(inst.score)
    assert len({it.pair_id for it in inst.pair}) == len(inst.pair)
    assert len({it.id for it in inst.batch}) == n_scenes
    by_scene = collections.defaultdict(list)
    for it in inst.score:
        assert it.human == QUALITY_SCORES[it.name]
        assert it.answer == inst.answers[it.id][it.name]
        assert it.image_path == f"images/{inst.scenes[it.id].image_id}.png"
        assert it.original_dataset == inst.scenes[it.id].source
        assert it.instruction == inst.questions[it.id].text
        by_scene[it.id].append(it.name)
    assert all(sorted(v) == sorted(QUALITIES) for v in by_scene.values())
    verdicts = collections.Counter()
    pairs_per_scene = collections.Counter()
    for it in inst.pair:
        sa, sb = inst_mod.ANSWER_SCORES[it.answer1.name], inst_mod.ANSWER_SCORES[it.answer2.name]
        assert it.human_answer == ("A" if sa > sb else "B" if sb > sa else "C")
        if it.human_answer == "C":
            assert {it.answer1.name, it.answer2.name} == {"correct", TIE_NAME}
        assert it.answer1.answer == inst.answers[it.id][it.answer1.name]
        verdicts[it.human_answer] += 1
        pairs_per_scene[it.id] += it.human_answer != "C"
    assert all(v > 0 for v in verdicts.values()) and set(verdicts) == {"A", "B", "C"}
    assert set(pairs_per_scene.values()) == {2}
    for it in inst.batch:
        scores = [QUALITY_SCORES[a.name] for a in it.answers]
        assert len(set(scores)) == 4 and set(a.name for a in it.answers) <= set(QUALITIES)
        ranked = [scores["ABCD".index(c)] for c in it.human_answer]
        assert ranked == sorted(scores, reverse=True)
    assert len({it.human_answer for it in inst.batch}) > 5  # the order of the answers varies
    none = inst_mod.build_instance("test", 2, pairs_per_scene=3, tie_rate=0.0)
    assert len(none.pair) == 3 * 6 and all(it.human_answer != "C" for it in none.pair)
    every = inst_mod.build_instance("test", 2, pairs_per_scene=0, tie_rate=1.0)
    assert [it.human_answer for it in every.pair] == ["C"] * 6


# ---------------------------------------------------------------------------------- round trip


def test_write_read_round_trip(tmp_path):
    inst = _instance()
    out = inst_mod.write_instance(inst, tmp_path / "inst")
    for kind, items in zip(formats.KINDS, _items(inst)):
        assert formats.read_jsonl(out / f"{kind}.jsonl", kind) == items
    loaded = inst_mod.load_images(out, [it.image_path for it in inst.score])
    assert loaded.keys() == inst.images.keys()
    for k, v in inst.images.items():
        assert loaded[k].dtype == np.uint8
        np.testing.assert_array_equal(loaded[k], v)
    # Rewriting an instance directory replaces it (no stale images); anything else is refused.
    small = inst_mod.build_instance("test", 1)
    inst_mod.write_instance(small, out)
    assert sorted(p.name for p in (out / "images").iterdir()) == sorted(k.split("/")[1] for k in small.images)
    assert len(formats.read_jsonl(out / "score.jsonl", "score")) == 15
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an instance directory"):
        inst_mod.write_instance(small, other)
    assert (other / "notes.txt").read_text() == "mine"
    (out / small.score[0].image_path).unlink()
    with pytest.raises(FileNotFoundError, match=small.scenes[0].image_id + ".png"):
        inst_mod.load_images(out, [small.score[0].image_path])


# -------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, match", [
    (dict(split="val", n_per_source=1), "split must be one of"),
    (dict(split="test", n_per_source=0), "n_per_source"),
    (dict(split="test", n_per_source=2.5), "n_per_source"),
    (dict(split="test", n_per_source=True), "n_per_source"),
    (dict(split="test", n_per_source=1, seed=-1), "seed"),
])
def test_bad_scene_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        inst_mod.make_scenes(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(pairs_per_scene=11), "pairs_per_scene"),
    (dict(tie_rate=1.5), "tie_rate"),
    (dict(split="dev"), "split must be one of"),
])
def test_bad_instance_arguments(kwargs, match):
    args = {"split": "test", "n_per_source": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        inst_mod.build_instance(**args)
