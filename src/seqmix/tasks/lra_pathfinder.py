"""LRA Pathfinder / Path-X (b2s6 spec E7, §7): the release's image folders and a procedural generator of our own.

Loader (``load_pathfinder_dir``): the LRA release layout as S4 reads it, e.g. ``pathfinder32/`` then
``curv_contour_length_14/metadata/*.npy``. Each "npy" is a text file whose lines read
``imgs/0 sample_0.png 0 1 ...``: the image's folder, its file name, an unused field, then the label. Images
are grayscale PNGs (read with PIL). S4 splits the pooled examples 80/10/10 at random; we do the same with a
seeded permutation. Path-X is the same layout at 128x128 (``pathfinder128``).

Generator (``generate_pathfinder``): a ``size`` x ``size`` uint8 image (0 background, 255 ink) with two 3x3
endpoint dots and curved 1-pixel paths drawn as 4-connected pixel chains. Two paths of ``path_len`` pixels are
drawn in both classes (so the amount of ink does not give the label away). Positive: both dots sit at the two
ends of the first path. Negative: they sit at one end of each path. Then ``n_distractors`` shorter paths.
Every path keeps a one-pixel margin from the ink already drawn, so paths never touch or cross: the label
(1 = the dots are joined) equals 4-connectivity of the ink between the dots, which ``dots_connected`` checks by
breadth-first search and the generator asserts for every image. Unlike the original, the paths are solid
(not dashed), so connectivity is defined on the pixels themselves.
"""

from __future__ import annotations

import logging
import math
import os
import random
from collections import deque
from pathlib import Path

import numpy as np
import torch

from .file_checks import parse_label, text_file_errors
from .seq_data import SPLITS, balanced_labels, seeded_permutation

log = logging.getLogger("seqmix.data")
INK = 255
DOT_RADIUS = 1  # 3x3 dots


def dots_connected(image: np.ndarray, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether ink pixels join pixel a to pixel b by 4-neighbour steps (breadth-first search)."""
    h, w = image.shape
    ink = image > 0
    if not (ink[a] and ink[b]):
        return False
    seen = np.zeros_like(ink)
    seen[a] = True
    queue = deque([a])
    while queue:
        r, c = queue.popleft()
        if (r, c) == b:
            return True
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if 0 <= nr < h and 0 <= nc < w and ink[nr, nc] and not seen[nr, nc]:
                seen[nr, nc] = True
                queue.append((nr, nc))
    return False


def _blocked(ink: np.ndarray, r: int, c: int) -> bool:
    """A pixel is blocked when it, or any of its 8 neighbours, already holds ink (the one-pixel margin)."""
    return bool(ink[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2].any())


def _step_ok(ink: np.ndarray, path: list, on_path: set, lo: int, hi: int, nr: int, nc: int) -> bool:
    """Inside the margin, not on the chain, not touching ink or older parts of the chain (its last 3 may)."""
    if not (lo <= nr <= hi and lo <= nc <= hi) or (nr, nc) in on_path or _blocked(ink, nr, nc):
        return False
    recent = set(path[-3:])
    return not any(
        (rr, cc) in on_path and (rr, cc) not in recent for rr in range(nr - 1, nr + 2) for cc in range(nc - 1, nc + 2)
    )


def _draw_path(rng: random.Random, ink: np.ndarray, length: int, curvature: float, margin: int):
    """A curved 4-connected chain of ``length`` pixels not touching ``ink`` (returned, not yet drawn), or None.
    The heading turns by a Gaussian of std ``curvature`` per step; a blocked step turns harder (up to 8 tries)."""
    size = ink.shape[0]
    lo, hi = margin, size - 1 - margin
    r, c = rng.randint(lo, hi), rng.randint(lo, hi)
    if _blocked(ink, r, c):
        return None
    path, angle = [(r, c)], rng.uniform(0, 2 * math.pi)
    on_path = {(r, c)}
    while len(path) < length:
        pr, pc = path[-1]
        for attempt in range(8):
            heading = angle + rng.gauss(0.0, curvature * (1 + attempt))
            # a heading within ~19.5 degrees of an axis (|1.5 sin| < 0.5) moves along it, else diagonally
            dr = max(-1, min(1, round(1.5 * math.sin(heading))))
            dc = max(-1, min(1, round(1.5 * math.cos(heading))))
            # a diagonal move goes through one 4-neighbour first, so the chain stays 4-connected
            steps = [(pr + dr, pc), (pr + dr, pc + dc)] if dr and dc else [(pr + dr, pc + dc)]
            if (dr, dc) == (0, 0):
                continue
            trial, trial_set = list(path), set(on_path)
            for st in steps:
                if not _step_ok(ink, trial, trial_set, lo, hi, *st):
                    break
                trial.append(st)
                trial_set.add(st)
            else:
                path, on_path, angle = trial, trial_set, heading
                break
        else:
            return None
    return path[:length]


def _stamp(ink: np.ndarray, pixels) -> None:
    for r, c in pixels:
        ink[r, c] = INK


def _dot(ink: np.ndarray, r: int, c: int) -> list[tuple[int, int]]:
    h = ink.shape[0]
    return [
        (rr, cc)
        for rr in range(r - DOT_RADIUS, r + DOT_RADIUS + 1)
        for cc in range(c - DOT_RADIUS, c + DOT_RADIUS + 1)
        if 0 <= rr < h and 0 <= cc < h
    ]


def _ends_clear(ink: np.ndarray, path) -> bool:
    """Both ends at Chebyshev distance >= DOT_RADIUS + 2 from existing ink, so their dots cannot touch it."""
    k = DOT_RADIUS + 1
    return not any(ink[max(r - k, 0) : r + k + 1, max(c - k, 0) : c + k + 1].any() for r, c in (path[0], path[-1]))


def _place(rng: random.Random, ink: np.ndarray, length: int, curvature: float, tries: int = 200):
    """Draw one path (with room for dots at its ends) and return it; None when it does not fit."""
    for _ in range(tries):
        path = _draw_path(rng, ink, length, curvature, margin=DOT_RADIUS + 1)
        if path is not None and _ends_clear(ink, path):
            _stamp(ink, path)
            return path
    return None


def draw_example(rng: random.Random, size: int, label: int, path_len: int, n_distractors: int, curvature: float):
    """(image (size, size) uint8, endpoints ((r, c), (r, c))) or None when the paths did not fit."""
    ink = np.zeros((size, size), dtype=np.uint8)
    first = _place(rng, ink, path_len, curvature)
    if first is None:
        return None
    # both classes draw two full-length paths, so the amount of ink says nothing about the label
    reserved = ink.copy()  # the second path keeps its margin from the first path's possible dots as well
    for r, c in (first[0], first[-1]):
        _stamp(reserved, _dot(reserved, r, c))
    second = _place(rng, reserved, path_len, curvature)
    if second is None:
        return None
    _stamp(ink, second)
    if label == 1:
        ends = (first[0], first[-1])
    else:
        ends = (first[rng.choice((0, -1))], second[rng.choice((0, -1))])
    for r, c in ends:  # dots before distractors, so distractors keep their margin from the dots too
        _stamp(ink, _dot(ink, r, c))
    for _ in range(n_distractors):
        length = max(3, path_len // 2 + rng.randint(0, path_len // 2))
        if _place(rng, ink, length, curvature, tries=20) is None:
            break  # a crowded image keeps the distractors it has
    return ink, ends


def generate_pathfinder(
    seed: int,
    sizes: dict[str, int],
    size: int = 32,
    path_len: int | None = None,
    n_distractors: int = 2,
    curvature: float = 0.35,
) -> dict:
    """Balanced splits: {split}/x (N, size*size, 1) uint8 row-major, {split}/y (N,), {split}/endpoints (N, 2, 2)."""
    path_len = path_len or max(6, 3 * size // 4)
    rng = random.Random(seed)
    out: dict = {"data_source": f"pathfinder-generator {size}x{size} (substitute)"}
    for split in SPLITS:
        labels = balanced_labels(sizes[split], 2, rng, f"pathfinder {split}_size")
        images, ends = [], []
        for label in labels:
            for _ in range(1000):
                drawn = draw_example(rng, size, label, path_len, n_distractors, curvature)
                if drawn is not None:
                    break
            else:
                raise ValueError(f"pathfinder: a path of {path_len} pixels does not fit a {size}x{size} image")
            image, pair = drawn
            if dots_connected(image, *pair) != bool(label):  # by construction; checked, not assumed
                raise AssertionError("pathfinder: drawn connectivity disagrees with the intended label")
            images.append(image)
            ends.append(pair)
        out[f"{split}/x"] = torch.from_numpy(np.stack(images).reshape(len(labels), size * size, 1))
        out[f"{split}/y"] = torch.tensor(labels, dtype=torch.int64)
        out[f"{split}/endpoints"] = torch.tensor(ends, dtype=torch.int64).reshape(-1, 2, 2)
    return out


def read_metadata(root: Path) -> list[tuple[Path, int]]:
    """(image path, label) for every line of every ``metadata/*.npy`` under ``root``, files in name order."""
    files = sorted((root / "metadata").glob("*.npy"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise FileNotFoundError(f"{root / 'metadata'}: no *.npy metadata files (LRA Pathfinder layout)")
    items = []
    for meta in files:
        with text_file_errors(meta):
            lines = meta.read_text().splitlines()
        for i, line in enumerate(lines):
            fields = line.split()
            if len(fields) < 4:
                raise ValueError(f"{meta}: line {line!r} has fewer than 4 fields (folder, file, _, label)")
            items.append((root / fields[0] / fields[1], parse_label(fields[3], 2, f"{meta}: line {i}")))
    return items


def load_pathfinder_dir(directory: str | os.PathLike, seed: int = 0, fractions=(0.8, 0.1)) -> dict:
    """The examples under ``directory`` (a ``curv_*`` folder), split 80/10/10 by a seeded permutation.
    Unreadable images are skipped with a warning (the release has a few corrupt files)."""
    from PIL import Image

    root = Path(directory)
    images, labels, skipped = [], [], 0
    for path, label in read_metadata(root):
        try:
            with Image.open(path) as im:
                image = np.asarray(im.convert("L"), dtype=np.uint8)
        except (OSError, ValueError) as e:
            skipped += 1
            log.warning("%s: unreadable Pathfinder image skipped (%s)", path, e)
            continue
        if image.ndim != 2 or image.shape[0] != image.shape[1] or (images and image.shape != images[0].shape):
            first = f"the first image's {images[0].shape}" if images else "a square image"
            raise ValueError(f"{path}: a {image.shape} image where {first} was expected (one Pathfinder size)")
        images.append(image)
        labels.append(label)
    if not images:
        raise FileNotFoundError(f"{root}: no readable Pathfinder images")
    x = torch.from_numpy(np.stack(images)).reshape(len(images), -1, 1)
    y = torch.tensor(labels, dtype=torch.int64)
    order = torch.tensor(seeded_permutation(len(y), seed, "pathfinder-split"))
    n_train, n_val = int(fractions[0] * len(y)), int(fractions[1] * len(y))
    parts = {"train": order[:n_train], "val": order[n_train : n_train + n_val], "test": order[n_train + n_val :]}
    side = images[0].shape[0]
    out: dict = {"data_source": f"lra-pathfinder{side}", "skipped": torch.tensor(skipped)}
    for split, idx in parts.items():
        out[f"{split}/x"], out[f"{split}/y"] = x[idx], y[idx]
    return out
