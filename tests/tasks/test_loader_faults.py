"""Corrupt real-data files through the LRA, story, OpenWebText and SlimPajama loaders: each error names the file
(and the row or line), labels are checked against the task's classes, and an empty split is an error (issue 26
item 7). Each case loaded silently or raised a library's error without the file before."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seqmix.tasks.byte_lm import ByteLM
from seqmix.tasks.image_tasks import LRAPathfinder
from seqmix.tasks.lra_listops import load_listops_tsv
from seqmix.tasks.lra_pathfinder import load_pathfinder_dir
from seqmix.tasks.lra_retrieval import load_aan
from seqmix.tasks.lra_text import load_imdb
from seqmix.tasks.rotations_lm import RotationsLM
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


# ----------------------------------------------------------------------------- OpenWebText, SlimPajama


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _parquet(frame) -> bytes:
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf)
    return buf.getvalue()


def _corpus_fault(fault: str) -> tuple[str, bytes, str]:
    """(file name, its bytes, the message expected) of one damaged corpus file."""
    import pandas as pd

    good = _parquet(pd.DataFrame({"text": ["a web page " * 20] * 10}))
    return {
        "jsonl-truncated": ("bad.jsonl", _jsonl([{"text": "a" * 50}] * 3)[:-30].encode(), "line 3: not a JSON object"),
        "jsonl-garbled": ("bad.jsonl", bytes(range(256)) * 4, "not UTF-8 text"),
        "jsonl-empty": ("bad.jsonl", b"", r"empty file \(0 bytes\)"),
        "jsonl-wrong-columns": (
            "bad.jsonl",
            _jsonl([{"body": "x"}]).encode(),
            r"line 1: no 'text' field \(fields: \['body'\]\)",
        ),
        "jsonl-not-text": ("bad.jsonl", _jsonl([{"text": "x"}, {"text": 5}]).encode(), "line 2: text is int, not text"),
        "jsonl-null": ("bad.jsonl", _jsonl([{"text": None}]).encode(), "line 1: text is NoneType, not text"),
        "json-array-not-objects": ("bad.json", b'["a", "b"]', "row 0: a JSON str, not an object"),
        "txt-binary": ("bad.txt", bytes(range(256)) * 4, "not UTF-8 text"),
        "txt-empty": ("bad.txt", b"", r"empty file \(0 bytes\)"),
        "parquet-truncated": ("bad.parquet", good[: len(good) // 2], "not a readable parquet file"),
        "parquet-garbled": ("bad.parquet", bytes(range(256)) * 4, "not a readable parquet file"),
        "parquet-wrong-columns": ("bad.parquet", _parquet(pd.DataFrame({"body": ["x"]})), "no column text"),
        "parquet-not-text": ("bad.parquet", _parquet(pd.DataFrame({"text": [1, 2]})), "row 0: text is int, not text"),
        "parquet-no-rows": ("bad.parquet", _parquet(pd.DataFrame({"text": pd.Series([], dtype=str)})), "no rows"),
    }[fault]


CORPUS_FAULTS = [
    "jsonl-truncated",
    "jsonl-garbled",
    "jsonl-empty",
    "jsonl-wrong-columns",
    "jsonl-not-text",
    "jsonl-null",
    "json-array-not-objects",
    "txt-binary",
    "txt-empty",
    "parquet-truncated",
    "parquet-garbled",
    "parquet-wrong-columns",
    "parquet-not-text",
    "parquet-no-rows",
]


@pytest.mark.parametrize("fault", CORPUS_FAULTS)
def test_openwebtext_faults_name_the_file(tmp_path, monkeypatch, fault):
    """Through the documented path (``rotations_lm`` with ``source: openwebtext``): before, Hugging Face's
    DatasetGenerationError or ArrowInvalid without the file, a 0-byte file skipped, and numbers and nulls
    loaded as documents (then failing in the tokenizer)."""
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    owt = tmp_path / "owt"
    owt.mkdir()
    (owt / "good.jsonl").write_text(_jsonl([{"text": "a good web page"}] * 3))
    name, content, message = _corpus_fault(fault)
    (owt / name).write_bytes(content)
    task = RotationsLM(source="openwebtext", openwebtext_dir=str(owt), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=message) as e:
        _ = task.corpus
    assert str(owt / name) in str(e.value)


@pytest.mark.parametrize("fault", [f for f in CORPUS_FAULTS if not f.startswith("txt")])
def test_slimpajama_faults_name_the_file(tmp_path, monkeypatch, fault):
    """Through ``byte_lm`` with ``source: slimpajama``: before, StopIteration for an empty file,
    AttributeError for a number or a null, DatasetGenerationError or ArrowInvalid without the file."""
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    root = tmp_path / "sp"
    for split in ("train", "validation"):
        (root / split).mkdir(parents=True)
        (root / split / "chunk1.jsonl").write_text(_jsonl([{"text": f"a {split} document"}] * 3))
    name, content, message = _corpus_fault(fault)
    path = root / f"test-{name}"
    path.write_bytes(content)
    task = ByteLM(source="slimpajama", data_dir=str(root), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=message) as e:
        _ = task.streams
    assert str(path) in str(e.value)


# ----------------------------------------------------------------------------- empty splits


def test_a_header_only_listops_split_is_an_error(tmp_path):
    """Before: the test split loaded with 0 rows (a download cut after its header) and failed later."""
    path = _listops(tmp_path, "Source\tTarget\n")
    with pytest.raises(ValueError, match="no rows after the header") as e:
        load_listops_tsv(tmp_path)
    assert str(path) in str(e.value)


def test_an_empty_aan_split_is_an_error(tmp_path):
    for name in ("new_aan_pairs.train.tsv", "new_aan_pairs.eval.tsv"):
        (tmp_path / name).write_text("1\ta\tb\tx\ty\n")
    (tmp_path / "new_aan_pairs.test.tsv").write_text("")
    with pytest.raises(ValueError, match=r"new_aan_pairs\.test\.tsv: no rows"):
        load_aan(tmp_path)


def test_an_aclimdb_class_folder_without_reviews_is_an_error(tmp_path):
    """Before: an empty test/neg folder loaded a test split of positive reviews only (chance read as 100%)."""
    for split in ("train", "test"):
        for label in ("neg", "pos"):
            folder = tmp_path / "aclImdb" / split / label
            folder.mkdir(parents=True)
            if (split, label) != ("test", "neg"):
                for i in range(3):
                    (folder / f"{i}_7.txt").write_bytes(b"a review")
    with pytest.raises(ValueError, match=r"aclImdb/test/neg: no reviews \(\*\.txt\)"):
        load_imdb(tmp_path)


def test_a_zero_row_imdb_parquet_is_named_as_empty(tmp_path):
    """Before: 'unreadable parquet data (DatasetGenerationError...)' for a valid file with no rows."""
    import pandas as pd

    path = _imdb(tmp_path / "imdb", pd.DataFrame({"text": pd.Series([], dtype=str), "label": pd.Series([], dtype=int)}))
    with pytest.raises(ValueError, match=r"test-0\.parquet: no rows$"):
        load_imdb(tmp_path / "imdb")
    assert path.exists()
