"""Corrupt real-data files through the LRA and story loaders: each error names the file (and the row), and
labels are checked against the task's classes (issue 26 item 7). Each case loaded silently or raised a
library's error without the file before."""

from __future__ import annotations

import numpy as np
import pytest

from seqmix.tasks.image_tasks import LRAPathfinder
from seqmix.tasks.lra_listops import load_listops_tsv
from seqmix.tasks.lra_pathfinder import load_pathfinder_dir
from seqmix.tasks.lra_retrieval import load_aan
from seqmix.tasks.lra_text import load_imdb
from seqmix.tasks.text_data import load_simplestories


def _listops(root, bad_test: str):
    for name in ("basic_train.tsv", "basic_val.tsv"):
        (root / name).write_text("Source\tTarget\n[MAX 1 2 ]\t2\n")
    path = root / "basic_test.tsv"
    path.write_text(bad_test) if isinstance(bad_test, str) else path.write_bytes(bad_test)
    return path


@pytest.mark.parametrize(
    "content,message",
    [
        ("Source\tTarget\n[MAX 1 2 ]\t2\n[MAX 1 9 ]\t10\n", "row 1: label 10 is outside the 10 classes"),
        ("Source\tTarget\n[MAX 1 2 ]\tnine\n", "row 0: label 'nine' is not a number"),
        ("Source\tTarget\n[MAX 1 2 ]\n", "row 0 lacks the Source or Target field"),
        (b"Source\tTarget\n\xff\xfe\x00\x81\n", "not a readable text table"),
    ],
)
def test_listops_tsv_faults_name_the_file(tmp_path, content, message):
    path = _listops(tmp_path, content)
    with pytest.raises(ValueError, match=message) as e:
        load_listops_tsv(tmp_path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize(
    "row,message",
    [("2\ta\tb\tx\ty", "row 1: label 2 is outside the 2 classes"), ("yes\ta\tb\tx\ty", "label 'yes' is not a number")],
)
def test_aan_labels_are_checked_against_two_classes(tmp_path, row, message):
    for name in ("new_aan_pairs.train.tsv", "new_aan_pairs.eval.tsv", "new_aan_pairs.test.tsv"):
        (tmp_path / name).write_text("1\ta\tb\tx\ty\n" + row + "\n")
    with pytest.raises(ValueError, match=message) as e:
        load_aan(tmp_path)
    assert "new_aan_pairs.train.tsv" in str(e.value)


def _imdb(root, test_frame=None, test_bytes=None):
    import pandas as pd

    root.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"text": ["good", "bad"], "label": [1, 0]}).to_parquet(root / "train-0.parquet")
    path = root / "test-0.parquet"
    if test_bytes is not None:
        path.write_bytes(test_bytes)
    else:
        test_frame.to_parquet(path)
    return path


@pytest.mark.parametrize("fault", ["empty", "truncated", "garbled", "wrong-columns", "label-3"])
def test_imdb_parquet_faults_name_the_file(tmp_path, fault):
    import pandas as pd

    good = pd.DataFrame({"text": ["a", "b", "c"], "label": [0, 1, 3 if fault == "label-3" else 1]})
    path = _imdb(tmp_path / "imdb", good)
    data = path.read_bytes()
    if fault == "empty":
        path.write_bytes(b"")
    elif fault == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif fault == "garbled":
        path.write_bytes(bytes(range(256)) * 4)
    elif fault == "wrong-columns":
        pd.DataFrame({"review": ["a"], "sentiment": [1]}).to_parquet(path)
    message = {"wrong-columns": "no column text, label", "label-3": "row 2: label 3 is outside the 2 classes"}
    with pytest.raises(ValueError, match=message.get(fault, "not a readable parquet file")) as e:
        load_imdb(tmp_path / "imdb")
    assert str(path) in str(e.value)


@pytest.mark.parametrize("fault", ["truncated", "wrong-columns", "not-text"])
def test_simplestories_parquet_faults_name_the_file(tmp_path, fault):
    import pandas as pd

    pd.DataFrame({"story": ["once upon a time"] * 3}).to_parquet(tmp_path / "train.parquet")
    path = tmp_path / "test.parquet"
    if fault == "wrong-columns":
        pd.DataFrame({"tale": ["x"]}).to_parquet(path)
        message = "no 'story' or 'text' column"
    elif fault == "not-text":
        pd.DataFrame({"story": ["x", None]}).to_parquet(path)
        message = "row 1: story is NoneType, not text"
    else:
        pd.DataFrame({"story": ["x"]}).to_parquet(path)
        path.write_bytes(path.read_bytes()[:20])
        message = "not a readable parquet file"
    with pytest.raises((ValueError, KeyError), match=message) as e:
        load_simplestories(tmp_path, hf_cache_dir=str(tmp_path / "hf"))
    assert str(path) in str(e.value)


def _pathfinder(root, sides, labels):
    from PIL import Image

    (root / "imgs").mkdir(parents=True)
    (root / "metadata").mkdir()
    lines = []
    for i, (side, label) in enumerate(zip(sides, labels)):
        Image.fromarray(np.full((side, side), 9 * i, np.uint8)).save(root / "imgs" / f"s{i}.png")
        lines.append(f"imgs s{i}.png 0 {label}")
    (root / "metadata" / "0.npy").write_text("\n".join(lines) + "\n")
    return root


def test_pathfinder_labels_and_image_sizes_are_checked(tmp_path):
    root = _pathfinder(tmp_path / "a", [8] * 4, [0, 1, 2, 0])
    with pytest.raises(ValueError, match=r"0\.npy: line 2: label 2 is outside the 2 classes"):
        load_pathfinder_dir(root)
    root = _pathfinder(tmp_path / "b", [8, 8, 16, 8], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"s2\.png: a \(16, 16\) image where the first image's \(8, 8\)"):
        load_pathfinder_dir(root)


def test_pathx_resolution_is_checked_against_the_images(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    root = _pathfinder(tmp_path / "pf", [8] * 10, [i % 2 for i in range(10)])
    task = LRAPathfinder(source="lra", data_dir=str(root), resolution=128, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=r"resolution 128, but the images in .*pf are 8x8; set resolution: 8"):
        task.batch(0, 0, 0, 4)
