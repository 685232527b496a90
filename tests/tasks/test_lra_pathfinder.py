"""B2S6 Pathfinder (b2s6 spec E7, §7): every generated label re-checked on the drawn pixels (our BFS and, as an
independent check, scipy's 4-connected component labelling), class balance, the dots and the image format,
determinism per seed, the LRA folder loader on PNG files and metadata written here, and the registered task."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import ndimage

from seqmix.tasks import lra_tasks
from seqmix.tasks.image_tasks import LRAPathfinder
from seqmix.tasks.lra_pathfinder import DOT_RADIUS, dots_connected, generate_pathfinder, load_pathfinder_dir
from seqmix.tasks.lra_tasks import fingerprint

SIZES = {"train": 40, "val": 10, "test": 10}
FOUR = ndimage.generate_binary_structure(2, 1)  # 4-connectivity


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    lra_tasks.load_set.cache_clear()


@pytest.mark.parametrize("size", [16, 32])
def test_every_label_matches_the_pixels(size):
    d = generate_pathfinder(0, SIZES, size=size, n_distractors=3)
    for split, n in SIZES.items():
        x, y, ends = d[f"{split}/x"], d[f"{split}/y"], d[f"{split}/endpoints"]
        assert x.shape == (n, size * size, 1) and x.dtype == torch.uint8
        assert set(torch.unique(x).tolist()) <= {0, 255}
        assert torch.bincount(y, minlength=2).tolist() == [n // 2, n // 2]
        for img, label, (a, b) in zip(x, y, ends.tolist()):
            image = img.reshape(size, size).numpy()
            components, _ = ndimage.label(image > 0, structure=FOUR)
            joined = components[tuple(a)] == components[tuple(b)] != 0
            assert joined == bool(label) == dots_connected(image, tuple(a), tuple(b))
            for r, c in (a, b):  # a full 3x3 dot of ink around each endpoint
                patch = image[r - DOT_RADIUS : r + DOT_RADIUS + 1, c - DOT_RADIUS : c + DOT_RADIUS + 1]
                assert patch.shape == (3, 3) and (patch == 255).all()


def test_distractors_are_drawn():
    d = generate_pathfinder(1, SIZES, size=32, n_distractors=3)
    counts = []
    for img in d["train/x"]:
        _, n = ndimage.label(img.reshape(32, 32).numpy() > 0, structure=FOUR)
        counts.append(n)
    assert min(counts) >= 2 and np.mean(counts) > 3  # beyond the one or two paths that hold the dots


def test_bfs_on_hand_made_images():
    image = np.zeros((5, 5), dtype=np.uint8)
    image[0, :3] = 255
    image[1, 2] = 255
    image[2, 2:] = 255
    assert dots_connected(image, (0, 0), (2, 4))
    image[1, 2] = 0
    assert not dots_connected(image, (0, 0), (2, 4))
    image[1, 3] = 255  # a diagonal touch does not join under 4-connectivity
    assert not dots_connected(image, (0, 0), (2, 4))


def test_generator_is_deterministic_per_seed():
    a, b, c = (generate_pathfinder(s, SIZES, size=16) for s in (5, 5, 6))
    assert all(torch.equal(a[k], b[k]) for k in a if k != "data_source")
    assert not torch.equal(a["train/x"], c["train/x"])


def write_release(root, n: int, side: int = 8):
    """A tiny LRA-layout folder: imgs/0/sample_i.png and metadata/0.npy (a text file, as in the release)."""
    from PIL import Image

    (root / "imgs" / "0").mkdir(parents=True)
    (root / "metadata").mkdir()
    lines = []
    for i in range(n):
        arr = np.full((side, side), 10 * i, dtype=np.uint8)
        Image.fromarray(arr).save(root / "imgs" / "0" / f"sample_{i}.png")
        lines.append(f"imgs/0 sample_{i}.png 0 {i % 2} 1 2")
    (root / "metadata" / "0.npy").write_text("\n".join(lines) + "\n")
    return root


def test_release_loader_reads_pngs_and_splits_80_10_10(tmp_path):
    root = write_release(tmp_path / "curv_contour_length_14", 20)
    (root / "imgs" / "0" / "sample_3.png").write_bytes(b"not a png")
    d = load_pathfinder_dir(root, seed=0)
    assert d["data_source"] == "lra-pathfinder8" and int(d["skipped"]) == 1
    sizes = [len(d[f"{s}/y"]) for s in ("train", "val", "test")]
    assert sizes == [15, 1, 3]  # 19 readable images: int(0.8 * 19), int(0.1 * 19), the rest
    pixels = sorted(int(x[0, 0]) // 10 for s in ("train", "val", "test") for x in d[f"{s}/x"])
    assert pixels == [i for i in range(20) if i != 3]  # every readable image once, none twice
    for s in ("train", "val", "test"):
        for x, y in zip(d[f"{s}/x"], d[f"{s}/y"]):
            assert x.shape == (64, 1) and int(y) == (int(x[0, 0]) // 10) % 2  # label from the metadata line


def test_release_loader_names_missing_metadata(tmp_path):
    with pytest.raises(FileNotFoundError, match="metadata"):
        load_pathfinder_dir(tmp_path)


def test_task_standardises_pixels_and_reads_the_release(tmp_path):
    gen = LRAPathfinder(resolution=16, train_size=20, val_size=10, test_size=10)
    x, y = gen.batch(0, 0, 0, 8)
    assert x.shape == (8, 256, 1) and x.dtype == torch.float32 and y.shape == (8,)
    full, _ = gen.split_set("train")
    assert abs(float(full.mean())) < 1e-4 and abs(float(full.std()) - 1) < 1e-2
    root = write_release(tmp_path / "pf", 10)
    real = LRAPathfinder(source="lra", data_dir=str(root), resolution=8)
    assert real.data_source == "lra-pathfinder8" and len(real.data["train/y"]) == 8
    assert [name for name, _ in fingerprint([root / "metadata"])] == [str(root / "metadata" / "0.npy")]


@pytest.mark.parametrize("task_name", ["lra_pathfinder", "lra_listops"])
def test_evaluate_with_a_tiny_classifier(task_name):
    """The tasks plug into the shared classifier: model_inputs build it, evaluate reports accuracy and chance."""
    from seqmix import registry
    from seqmix.models.classifier import SequenceClassifier

    kwargs = {"resolution": 16} if task_name == "lra_pathfinder" else {"max_len": 32, "min_len": 5}
    task = registry.get("task", task_name)(train_size=20, val_size=10, test_size=20, **kwargs)
    torch.manual_seed(0)
    model = SequenceClassifier(**task.model_inputs(), d_model=8, n_layers=1, mixer={"name": "mha", "heads": 2})
    x, y = task.batch(0, 0, 0, 4)
    assert task.loss(model(x), y).ndim == 0
    out = task.evaluate(model)
    assert 0 <= out["accuracy"] <= 1 and out["chance"] == pytest.approx(1 / task.d_out) and out["loss"] > 0


def test_amount_of_ink_does_not_give_the_label_away():
    """Both classes draw two full paths: with one path for positives, ink alone separated the classes."""
    d = generate_pathfinder(2, {"train": 200, "val": 2, "test": 2}, size=32)
    ink = (d["train/x"][..., 0] > 0).sum(1).double()
    y = d["train/y"]
    gap = abs(float(ink[y == 1].mean() - ink[y == 0].mean()))
    assert gap < 0.5 * float(ink.std())
