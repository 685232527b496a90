"""Checks of the real-data files the loaders read: every error names the file (and the row where there is one).

- ``text_file_errors(path)``: a decoding or csv error inside the block is a ValueError naming ``path``.
- ``parse_label(text, n_classes, where)``: a class id read from text, in 0..n_classes-1.
- ``load_parquet(files, columns, where)``: the given columns of parquet files, in file order, as Hugging Face
  ``datasets`` reads them; a file that is no parquet file (empty, truncated, garbled) or lacks a column is a
  ``ValueError`` naming it, as is any later failure of the read (naming the files). ``row_origin`` turns a
  row of the result back into (file, row within it).
- ``text_records(path, kind, column)``: the texts of one corpus file (a whole ``.txt`` document, the
  ``column`` of each JSON line or object, of a parquet column); an empty, garbled, truncated or binary file,
  a missing column and a value that is not text are a ``ValueError`` naming the file and the line or row
  (the OpenWebText and SlimPajama loaders, which gave Hugging Face's DatasetGenerationError, ArrowInvalid or
  StopIteration without the file, or loaded numbers and nulls as documents).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
from collections.abc import Callable, Iterator, Sequence


@contextlib.contextmanager
def text_file_errors(path) -> Iterator[None]:
    """Turns a decoding or csv error while reading ``path`` (a binary or garbled file) into a ValueError naming it."""
    try:
        yield
    except (UnicodeDecodeError, csv.Error) as e:
        raise ValueError(f"{path}: not a readable text table ({type(e).__name__}: {e})") from None


def parse_label(text, n_classes: int, where: str, parse: Callable = int) -> int:
    """``parse(text)`` as a class id in 0..n_classes-1, or a ValueError naming ``where`` (file and row)."""
    try:
        label = int(parse(text))
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{where}: label {text!r} is not a number") from None
    if not 0 <= label < n_classes:
        raise ValueError(f"{where}: label {label} is outside the {n_classes} classes 0..{n_classes - 1}")
    return label


def parquet_columns(path: str) -> list[str]:
    """The column names of a parquet file, or a ValueError naming it (not parquet: empty, truncated, garbled)."""
    return _parquet_file(path).schema_arrow.names


def _parquet_file(path: str):
    import pyarrow
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pyarrow.ArrowException, OSError) as e:
        raise ValueError(f"{path}: not a readable parquet file ({type(e).__name__}: {e})") from None


def parquet_rows(files: Sequence[str], columns: Sequence[str]) -> list[int]:
    """The row count of each file, read from its footer; a ValueError names a file that is not parquet or
    lacks one of ``columns``."""
    rows = []
    for path in files:
        meta = _parquet_file(path)
        missing = [c for c in columns if c not in meta.schema_arrow.names]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} (columns: {meta.schema_arrow.names})")
        if meta.metadata.num_rows == 0:
            raise ValueError(f"{path}: no rows")
        rows.append(meta.metadata.num_rows)
    return rows


def load_parquet(
    files: Sequence[str], columns: Sequence[str], cache_dir: str | None = None
) -> tuple[dict[str, list], list[int]]:
    """({column: values} of ``files`` concatenated in order, the row count of each file), the files checked
    first with ``parquet_rows``."""
    import datasets
    import pyarrow

    rows = parquet_rows(files, columns)
    try:
        ds = datasets.load_dataset("parquet", data_files={"rows": list(files)}, cache_dir=cache_dir)["rows"]
        return {c: list(ds[c]) for c in columns}, rows
    except (pyarrow.ArrowException, OSError, datasets.exceptions.DatasetGenerationError) as e:
        raise ValueError(f"{', '.join(files)}: unreadable parquet data ({type(e).__name__}: {e})") from None


def row_origin(files: Sequence[str], rows: Sequence[int], index: int) -> str:
    """'<file>: row <r>' for row ``index`` of the concatenation of ``files`` with ``rows`` rows each."""
    for path, n in zip(files, rows):
        if index < n:
            return f"{path}: row {index}"
        index -= n
    return f"{', '.join(files)}: row {index}"


def text_records(path: str | os.PathLike, kind: str, column: str = "text") -> list[str]:
    """The texts of one corpus file, in order: ``kind`` "text" (the file is one document, read as UTF-8 with
    universal newlines), "json" (JSON Lines, or one JSON array of objects: each object's ``column``) or
    "parquet" (its ``column``). Empty texts are kept (callers decide); anything else that is not a string is an
    error, as is a file of 0 bytes (a download cut to nothing)."""
    if os.path.getsize(path) == 0:
        raise ValueError(f"{path}: empty file (0 bytes)")
    if kind == "text":
        return [_read_utf8(path)]
    if kind == "parquet":
        named = [(f"row {i}", v) for i, v in enumerate(_parquet_column(str(path), column))]
    elif kind == "json":
        named = _json_column(path, column)
    else:
        raise ValueError(f"{path}: unknown corpus file kind {kind!r} (text, json or parquet)")
    for where, value in named:
        if not isinstance(value, str):
            raise ValueError(f"{path}: {where}: {column} is {type(value).__name__}, not text")
    return [v for _, v in named]


def _read_utf8(path) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e})") from None


def _parquet_column(path: str, column: str) -> list:
    import pyarrow

    meta = _parquet_file(path)
    if column not in meta.schema_arrow.names:
        raise ValueError(f"{path}: no column {column} (columns: {meta.schema_arrow.names})")
    if meta.metadata.num_rows == 0:
        raise ValueError(f"{path}: no rows")
    try:
        return meta.read(columns=[column]).column(column).to_pylist()
    except (pyarrow.ArrowException, OSError) as e:
        raise ValueError(f"{path}: unreadable parquet data ({type(e).__name__}: {e})") from None


def _json_column(path, column: str) -> list[tuple[str, object]]:
    """[(where, value)]: the ``column`` of every record, each named by its line (JSON Lines) or row (an array)."""
    text = _read_utf8(path)
    if text.lstrip().startswith("["):  # one JSON array of objects (.json)
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        return [(f"row {i}", _field(path, f"row {i}", r, column)) for i, r in enumerate(records)]
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {i}: not a JSON object ({e.msg}; a truncated or garbled line)") from None
        out.append((f"line {i}", _field(path, f"line {i}", record, column)))
    return out


def _field(path, where: str, record, column: str):
    if not isinstance(record, dict):
        raise ValueError(f"{path}: {where}: a JSON {type(record).__name__}, not an object with a {column!r} field")
    if column not in record:
        raise ValueError(f"{path}: {where}: no {column!r} field (fields: {sorted(record)})")
    return record[column]
