"""B2S6 images (b2s6 spec E6, E7 Image, §7): the idx reader (gzip and plain) and Fashion-MNIST loader on files
written here, its detection ($FASHION_MNIST_DIR), the CIFAR-10 pickle loader (plane layout, PIL grayscale
weights, colour as 3 x 1024), the digits substitute (split sizes, balance, data_source), resizing, caps and
the registered task's standardisation."""

from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest
import torch

from seqmix.tasks import image_data, lra_tasks
from seqmix.tasks.image_data import find_fashion_mnist, load_cifar10, load_images, read_idx, to_grayscale
from seqmix.tasks.image_tasks import LRAImage


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    monkeypatch.delenv("FASHION_MNIST_DIR", raising=False)
    monkeypatch.setattr(image_data, "FASHION_DIRS", ())  # the machine's own copy must not leak into tests
    lra_tasks.load_set.cache_clear()


def idx_bytes(arr: np.ndarray) -> bytes:
    code = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}[arr.dtype]
    return bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}i", *arr.shape) + arr.tobytes()


def write_fashion(root, n_train=30, n_test=10, compress=True):
    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for stem, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        for name, arr in ((f"{stem}-images-idx3-ubyte", images), (f"{stem}-labels-idx1-ubyte", labels)):
            data = idx_bytes(arr)
            (root / (name + (".gz" if compress else ""))).write_bytes(gzip.compress(data) if compress else data)
        arrays[stem] = (images, labels)
    return arrays


@pytest.mark.parametrize("compress", [True, False])
def test_read_idx_round_trips(tmp_path, compress):
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / "a-idx3-ubyte"
    path.write_bytes(gzip.compress(idx_bytes(arr)) if compress else idx_bytes(arr))
    assert np.array_equal(read_idx(path), arr)
    ints = np.array([1, -2, 70000], dtype=">i4")
    (tmp_path / "b").write_bytes(idx_bytes(ints))
    assert read_idx(tmp_path / "b").tolist() == [1, -2, 70000]


def test_read_idx_rejects_garbage_and_truncation(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(ValueError, match="not an idx file"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(idx_bytes(np.zeros((4, 4), np.uint8))[:-3])
    with pytest.raises(ValueError, match="truncated"):
        read_idx(tmp_path / "short")


@pytest.mark.parametrize("compress", [True, False])
def test_fashion_mnist_is_found_and_loaded(tmp_path, monkeypatch, compress):
    root = tmp_path / "fm"
    arrays = write_fashion(root, compress=compress)
    assert find_fashion_mnist() is None
    monkeypatch.setenv("FASHION_MNIST_DIR", str(root))
    assert find_fashion_mnist() == root
    d = load_images("auto", seed=0)
    assert d["data_source"] == "fashion-mnist (substitute)"
    assert [len(d[f"{s}/y"]) for s in ("train", "val", "test")] == [27, 3, 10]  # 10% of train held out
    assert d["test/x"].shape == (10, 784, 1)
    assert torch.equal(d["test/x"][:, :, 0], torch.from_numpy(arrays["t10k"][0].reshape(10, 784)))
    train_rows = {tuple(r) for r in arrays["train"][0].reshape(30, 784).tolist()}
    got = {tuple(r) for s in ("train", "val") for r in d[f"{s}/x"][:, :, 0].tolist()}
    assert got == train_rows  # train + val = the training images, each once


def write_cifar(root, n_per_batch=4):
    rng = np.random.default_rng(1)
    root.mkdir(parents=True, exist_ok=True)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, size=n_per_batch)]
        with open(root / name, "wb") as f:
            pickle.dump({b"data": data, b"labels": labels, b"batch_label": name.encode()}, f)
        batches[name] = (data, labels)
    return batches


def test_cifar_pickles_load_as_planes(tmp_path):
    batches = write_cifar(tmp_path / "cifar-10-batches-py")
    raw = load_cifar10(tmp_path / "cifar-10-batches-py")
    assert raw["train"][0].shape == (20, 32, 32, 3) and raw["test"][0].shape == (4, 32, 32, 3)
    data, labels = batches["test_batch"]
    # pixel (r, c) of channel k sits at data[k * 1024 + 32 * r + c]
    assert raw["test"][0][2, 5, 7, 1] == data[2, 1024 + 32 * 5 + 7] and raw["test"][1].tolist() == labels


def test_cifar_grayscale_and_colour_sequences(tmp_path):
    batches = write_cifar(tmp_path / "c")
    gray = load_images("cifar10", tmp_path / "c", channels=1)
    colour = load_images("cifar10", tmp_path / "c", channels=3)
    assert gray["data_source"] == "cifar10" and gray["test/x"].shape == (4, 1024, 1)
    assert colour["test/x"].shape == (4, 1024, 3)
    data = batches["test_batch"][0].astype(np.float64)
    expect = np.rint(0.299 * data[:, :1024] + 0.587 * data[:, 1024:2048] + 0.114 * data[:, 2048:])
    assert np.array_equal(gray["test/x"][:, :, 0].numpy(), expect.astype(np.uint8))
    assert np.array_equal(colour["test/x"][:, :, 2].numpy(), batches["test_batch"][0][:, 2048:])
    assert [len(gray[f"{s}/y"]) for s in ("train", "val")] == [18, 2]


def test_cifar_errors_name_the_missing_batch(tmp_path):
    write_cifar(tmp_path / "c")
    (tmp_path / "c" / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        load_cifar10(tmp_path / "c")
    with pytest.raises(ValueError, match="colour"):
        load_images("digits", channels=3)


def test_digits_substitute_splits_and_resizing():
    d = load_images("auto", seed=0)
    assert d["data_source"] == "sklearn-digits (substitute)"
    sizes = [len(d[f"{s}/y"]) for s in ("train", "val", "test")]
    assert sum(sizes) == 1797 and abs(sizes[0] - 0.8 * 1797) < 10 and abs(sizes[1] - 0.1 * 1797) < 10
    assert int(d["train/x"].max()) == 255 and int(d["train/x"].min()) == 0
    assert d["train/x"].shape == (sizes[0], 64, 1)
    per_class = torch.bincount(torch.cat([d[f"{s}/y"] for s in ("train", "val", "test")]), minlength=10)
    for s, frac in (("train", 0.8), ("val", 0.1)):  # stratified: each class keeps its share in every split
        counts = torch.bincount(d[f"{s}/y"], minlength=10)
        assert (counts - frac * per_class).abs().max() <= 1
    up = load_images("digits", image_size=32, caps={"train": 50})
    assert up["train/x"].shape == (50, 1024, 1) and up["test/x"].shape == (sizes[2], 1024, 1)


def test_grayscale_matches_pil():
    from PIL import Image

    rgb = np.random.default_rng(2).integers(0, 256, size=(1, 6, 6, 3), dtype=np.uint8)
    ours = to_grayscale(rgb)[0, :, :, 0].astype(int)
    pil = np.asarray(Image.fromarray(rgb[0]).convert("L")).astype(int)
    assert np.abs(ours - pil).max() <= 1  # PIL rounds in fixed point


def test_task_standardises_with_train_statistics():
    task = LRAImage(source="digits", image_size=16, train_size=200)
    x, _ = task.split_set("train")
    assert x.shape == (200, 256, 1) and abs(float(x.mean())) < 1e-4 and abs(float(x.std()) - 1) < 1e-2
    assert task.model_inputs() == {"d_in": 1, "d_out": 10, "seq_len": 256}
    assert task.data_source == "sklearn-digits (substitute)"


class _Payload:
    """What a crafted batch file would carry: unpickling it calls os.system."""

    def __reduce__(self):
        import os

        return (os.system, ("touch PWNED",))


def test_a_crafted_cifar_batch_runs_no_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_cifar(tmp_path / "c")
    with open(tmp_path / "c" / "data_batch_3", "wb") as f:
        pickle.dump({b"data": _Payload(), b"labels": []}, f)
    with pytest.raises(
        ValueError, match=r"data_batch_3: not a CIFAR-10 batch .*posix.system|data_batch_3: not a CIFAR"
    ):
        load_cifar10(tmp_path / "c")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "not a CIFAR-10 batch"),  # empty
        (b"\x80\x04garbage", "not a CIFAR-10 batch"),  # garbled
        ("wrong-keys", "a dict with b'data' and b'labels'"),
        ("short-rows", r"\(N, 3072\) uint8"),
        ("label-10", "label 10 at row 1 is outside the 10 classes"),
    ],
)
def test_corrupt_cifar_batches_are_named(tmp_path, content, message):
    write_cifar(tmp_path / "c")
    path = tmp_path / "c" / "test_batch"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        batch = {b"data": np.zeros((3, 3072), np.uint8), b"labels": [0, 1, 2]}
        if content == "wrong-keys":
            batch = {b"pixels": batch[b"data"]}
        elif content == "short-rows":
            batch[b"data"] = np.zeros((3, 100), np.uint8)
        else:
            batch[b"labels"] = [0, 10, 2]
        with open(path, "wb") as f:
            pickle.dump(batch, f)
    with pytest.raises(ValueError, match=message) as e:
        load_cifar10(tmp_path / "c")
    assert str(path) in str(e.value)


def test_an_incomplete_fashion_mnist_is_an_error_not_digits(tmp_path, monkeypatch):
    """Before: `source: auto` with one idx file missing trained on digits without a warning."""
    (tmp_path / "fm").mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"):
        (tmp_path / "fm" / name).write_bytes(b"")
    monkeypatch.setenv("FASHION_MNIST_DIR", str(tmp_path / "fm"))
    with pytest.raises(FileNotFoundError, match=r"fm: Fashion-MNIST is incomplete, missing t10k-labels-idx1-ubyte"):
        find_fashion_mnist()


def _idx_faults():
    good = idx_bytes(np.zeros((4, 4), np.uint8))
    return {
        "gzip-truncated": (gzip.compress(good)[:-10], "damaged gzip file"),
        "gzip-garbled": (b"\x1f\x8b" + b"garbage" * 4, "damaged gzip file"),
        "header-truncated": (bytes([0, 0, 0x08, 3]) + b"\x00\x00", "truncated idx header"),
        "negative-dimension": (bytes([0, 0, 0x08, 1]) + struct.pack(">i", -5), "negative dimension"),
    }


@pytest.mark.parametrize("fault", sorted(_idx_faults()))
def test_damaged_idx_files_are_named(tmp_path, fault):
    """Before: a cut or garbled gzip raised EOFError/BadGzipFile, a short header numpy's 'buffer is smaller',
    none naming the file; a negative dimension loaded as an empty array."""
    content, message = _idx_faults()[fault]
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as e:
        read_idx(path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize(
    "fault,message",
    [
        ("label-10", "label 10 at row 3 is outside the 10 classes 0..9"),
        ("labels-2d", r"labels are uint8 \(5, 2\)"),
        ("images-int32", r"images are int32 .* \(N, H, W\) uint8"),
    ],
)
def test_fashion_mnist_checks_labels_and_dtypes(tmp_path, fault, message):
    """Before: a label 10 loaded (an out-of-range class for the 10-way head); int32 images wrapped to uint8."""
    write_fashion(tmp_path / "fm", compress=False)
    name = "t10k-images-idx3-ubyte" if fault == "images-int32" else "t10k-labels-idx1-ubyte"
    if fault == "label-10":
        arr = np.array([0, 1, 2, 10, 4, 5, 6, 7, 8, 9], np.uint8)
    elif fault == "labels-2d":
        arr = np.zeros((5, 2), np.uint8)
    else:
        arr = np.full((10, 28, 28), 300, dtype=">i4")
    (tmp_path / "fm" / name).write_bytes(idx_bytes(arr))
    with pytest.raises(ValueError, match=message) as e:
        image_data.load_fashion_mnist(tmp_path / "fm")
    assert str(tmp_path / "fm" / name) in str(e.value)


def test_an_empty_cifar_batch_or_fashion_split_is_an_error(tmp_path):
    """Before: a batch or an idx pair of 0 images loaded as an empty split (a cut download), failing later."""
    write_cifar(tmp_path / "c")
    with open(tmp_path / "c" / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros((0, 3072), np.uint8), b"labels": []}, f)
    with pytest.raises(ValueError, match=r"test_batch: no images \(an empty batch\)"):
        load_cifar10(tmp_path / "c")
    write_fashion(tmp_path / "fm", compress=False)
    (tmp_path / "fm" / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(np.zeros((0, 28, 28), np.uint8)))
    (tmp_path / "fm" / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros((0,), np.uint8)))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte: no images \(an empty split\)"):
        image_data.load_fashion_mnist(tmp_path / "fm")
