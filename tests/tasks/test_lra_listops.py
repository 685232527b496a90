"""B2S6 ListOps (b2s6 spec E7, §7): the evaluator on hand-made expressions (MED of an even count floors the mean of
the two middle values), the seeded generator (every label re-computed from its tokens, exact class balance,
length and depth limits, disjoint splits, determinism per seed), the LRA TSV loader on files written here, and
the registered task (left padding, the checksummed cache)."""

from __future__ import annotations

import pytest
import torch

from seqmix.tasks import data_cache, lra_tasks
from seqmix.tasks.lra_listops import (
    NUM_CLASSES,
    TOKEN_ID,
    VOCAB,
    apply_op,
    evaluate_tokens,
    expression_stats,
    generate_listops,
    load_listops_tsv,
    tokenize,
)
from seqmix.tasks.lra_tasks import LRAListOps

SIZES = {"train": 100, "val": 20, "test": 20}


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch):
    monkeypatch.delenv("SEQMIX_DATA_CACHE", raising=False)
    lra_tasks.load_set.cache_clear()


def ids_to_tokens(row: torch.Tensor, length: int) -> list[str]:
    return [VOCAB[int(i)] for i in row[:length]]


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("[MAX 2 9 [MIN 4 7 ] 0 ]", 9),
        ("[MIN 3 [MAX 1 8 ] 5 ]", 3),
        ("[SM 7 8 9 ]", 4),  # 24 mod 10
        ("[MED 1 9 4 ]", 4),
        ("[MED 2 5 ]", 3),  # even count: floor((2 + 5) / 2)
        ("[MED 1 2 8 9 ]", 5),  # floor((2 + 8) / 2)
        ("[SM [MAX 9 9 ] [MIN 9 9 ] [MED 9 9 ] ]", 7),  # 27 mod 10
        ("( ( [MAX 2 ( [MIN 3 4 ] ) ] ) )", 3),  # the release's parentheses are dropped
    ],
)
def test_evaluator_on_hand_made_expressions(expr, value):
    assert evaluate_tokens(tokenize(expr)) == value


@pytest.mark.parametrize("bad", ["[MAX 1 2", "[MAX 1 2 ] ]", "[FOO 1 ]", "1 2", "[MAX ]"])
def test_evaluator_rejects_malformed_input(bad):
    with pytest.raises(ValueError):
        evaluate_tokens(tokenize(bad))


def test_apply_op_median_of_even_count_is_floor_of_middle_mean():
    assert apply_op("[MED", [0, 1]) == 0 and apply_op("[MED", [9, 0, 4, 7]) == 5


def test_generator_labels_balance_lengths_and_depth():
    d = generate_listops(0, SIZES, max_depth=3, max_args=4, min_len=8, max_len=64)
    seen = set()
    for split, n in SIZES.items():
        x, lengths, y = d[f"{split}/x"], d[f"{split}/lengths"], d[f"{split}/y"]
        assert x.shape == (n, 64) and x.dtype == torch.int16
        assert torch.bincount(y, minlength=NUM_CLASSES).tolist() == [n // NUM_CLASSES] * NUM_CLASSES
        assert int(lengths.min()) >= 8 and int(lengths.max()) <= 64
        for row, length, label, stats in zip(x, lengths, y, d[f"{split}/stats"]):
            tokens = ids_to_tokens(row, int(length))
            assert evaluate_tokens(tokens) == int(label)  # every label re-computed from the tokens alone
            assert (row[int(length) :] == TOKEN_ID["<pad>"]).all()
            depth, ops = expression_stats(tokens)
            assert 1 <= depth <= 3 and (depth, ops) == tuple(stats.tolist())
            seen.add(" ".join(tokens))
    assert len(seen) == sum(SIZES.values())  # no expression in two splits (nor twice in one)


def test_generator_is_deterministic_per_seed():
    a, b, c = (generate_listops(s, SIZES, max_len=64) for s in (3, 3, 4))
    assert all(torch.equal(a[k], b[k]) for k in a if k != "data_source")
    assert not torch.equal(a["train/x"], c["train/x"])


def test_generator_explains_impossible_lengths():
    with pytest.raises(ValueError, match="no expression of 500..600 tokens"):
        generate_listops(0, SIZES, max_depth=2, max_args=3, min_len=500, max_len=600)
    with pytest.raises(ValueError, match="multiple of 10"):
        generate_listops(0, {"train": 15, "val": 10, "test": 10})


def write_tsv(path, rows):
    path.write_text("Source\tTarget\n" + "".join(f"{s}\t{t}\n" for s, t in rows))


def test_tsv_loader_reads_the_lra_layout(tmp_path):
    rows = [("( ( [MAX 2 9 ] ) )", 9), ("[SM 3 4 ]", 7), ("[MIN 5 ( [MED 1 3 ] ) ]", 2)]
    for name in ("basic_train.tsv", "basic_val.tsv", "basic_test.tsv"):
        write_tsv(tmp_path / name, rows)
    d = load_listops_tsv(tmp_path, max_len=12)
    assert d["data_source"] == "lra-listops" and d["train/x"].shape == (3, 12)
    assert d["test/y"].tolist() == [9, 7, 2] and d["val/lengths"].tolist() == [4, 4, 7]
    for row, length, label in zip(d["train/x"], d["train/lengths"], d["train/y"]):
        assert evaluate_tokens(ids_to_tokens(row, int(length))) == int(label)


def test_tsv_loader_names_missing_files_and_columns(tmp_path):
    with pytest.raises(FileNotFoundError, match="basic_train.tsv"):
        load_listops_tsv(tmp_path)
    for name in ("basic_train.tsv", "basic_val.tsv", "basic_test.tsv"):
        (tmp_path / name).write_text("Expr\tValue\n[MAX 1 2 ]\t2\n")
    with pytest.raises(KeyError, match="Source and Target"):
        load_listops_tsv(tmp_path)


def test_task_left_padding_puts_the_expression_last():
    right = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=64)
    left = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=64, pad_side="left")
    xr, yr = right.split_set("test")
    xl, yl = left.split_set("test")
    n = right.data["test/lengths"]
    assert torch.equal(yr, yl) and xr.shape == xl.shape == (10, 64)
    for i in range(10):
        k = int(n[i])
        assert torch.equal(xl[i, 64 - k :], xr[i, :k]) and (xl[i, : 64 - k] == 0).all()
    assert right.model_inputs() == {"vocab_size": len(VOCAB), "d_out": 10, "seq_len": 64}


def test_task_cache_is_checksummed_and_reused(tmp_path, monkeypatch):
    task = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=64, cache_dir=str(tmp_path))
    first = task.data
    files = list(tmp_path.rglob("*.pt"))
    assert len(files) == 1 and "b2s6_listops" in str(files[0])
    lra_tasks.load_set.cache_clear()
    monkeypatch.setitem(lra_tasks.BUILDERS, "listops", lambda **kw: pytest.fail("rebuilt despite a valid cache"))
    again = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=64, cache_dir=str(tmp_path)).data
    assert all(torch.equal(first[k], again[k]) for k in first if k != "data_source")
    assert data_cache.checksum(first) == data_cache.checksum(again)
