"""Checks of the real-data files the loaders read: every error names the file (and the row where there is one).

- ``text_file_errors(path)``: a decoding or csv error inside the block is a ValueError naming ``path``.
- ``parse_label(text, n_classes, where)``: a class id read from text, in 0..n_classes-1.
- ``load_parquet(files, columns, where)``: the given columns of parquet files, in file order, as Hugging Face
  ``datasets`` reads them; a file that is no parquet file (empty, truncated, garbled) or lacks a column is a
  ``ValueError`` naming it, as is any later failure of the read (naming the files). ``row_origin`` turns a
  row of the result back into (file, row within it).
"""

from __future__ import annotations

import contextlib
import csv
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
