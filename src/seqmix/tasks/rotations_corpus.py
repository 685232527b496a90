"""Corpora for the accumulated-rotations LM (rotations spec §7): where the documents come from.

- ``synthetic_stream``: the bundled offline default (rotations spec §7 option A), already token ids: documents of
  geometric length (mean 600) each with one of 64 topics; tokens from a topic-conditioned sparse second-order
  Markov chain (the context (topic, t-2, t-1) hashed to one of ``contexts`` rows of 16-32 successors with a
  Zipf(1.1) tilt towards small ids); with probability 0.05 per position a copy of 8-32 earlier tokens of the
  same document starts, its source offset log-uniform in [16, 4096]. No separators. Topics that persist over
  hundreds of tokens and copies from thousands back give far context its use, so a model that extrapolates
  can keep gaining from it and one that does not is measurably hurt (rotations spec §7: "RoPE's failure mode").
  ``SyntheticSpec`` sets the number of topics, the chain's order and the table's rows: the spec's law (64
  topics, second order, 512 x 512 x 64 contexts hashed onto 32K rows) is near-unigram for a small model (given
  t-1 alone the successors mix over every (topic, t-2)); first order with few topics is learnable at cpu scale.
- ``find_english`` / ``load_english``: natural English installed on the machine (option B): the Python
  documentation's HTML (``/usr/share/doc/python3*/html``, package ``python3.X-doc``; tags stripped) and the
  GCIDE dictionary (``/usr/share/dictd/gcide.dict.dz``, package ``dict-gcide``).
- ``openwebtext_files`` / ``load_openwebtext``: OpenWebText (the paper's corpus) for users who have it, from a
  local directory of ``.txt`` (one document per file), ``.jsonl`` / ``.json`` or ``.parquet`` (a ``text``
  column), each file checked as it is read (``file_checks.text_records``).
"""

from __future__ import annotations

import gzip
import html
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .file_checks import text_records

ENGLISH_ROOTS = ("/usr/share/doc", "/usr/share/dictd")
OWT_SUFFIXES = {".txt": "text", ".jsonl": "json", ".json": "json", ".parquet": "parquet"}


@dataclass(frozen=True)
class SyntheticSpec:
    """The synthetic stream's law (rotations spec §7 A). ``order``: the chain's order (2 as the spec; 1 makes
    the context (topic, t-1)); ``contexts``: rows of the successor table. When every context fits
    (topics * vocab**order <= contexts) each gets its own row; otherwise contexts are hashed onto the rows."""

    vocab: int = 512
    topics: int = 64
    order: int = 2
    mean_doc: float = 600.0
    successors: tuple[int, int] = (16, 32)
    zipf: float = 1.1
    contexts: int = 1 << 15
    copy_prob: float = 0.05
    copy_span: tuple[int, int] = (8, 32)
    copy_offset: tuple[int, int] = (16, 4096)


def _successor_table(rng: np.random.Generator, s: SyntheticSpec) -> tuple[np.ndarray, np.ndarray]:
    """(contexts, S) successor ids and their cumulative probabilities (Zipf tilt, 16-32 live per row)."""
    width = s.successors[1]
    succ = rng.integers(0, s.vocab, size=(s.contexts, width))
    live = np.arange(width)[None, :] < rng.integers(s.successors[0], width + 1, size=(s.contexts, 1))
    w = np.where(live, (1.0 + succ) ** -s.zipf, 0.0)
    cum = np.cumsum(w, axis=1)
    return succ.astype(np.int32), cum / cum[:, -1:]


def _context_row(topic: np.ndarray, a: np.ndarray, b: np.ndarray, s: SyntheticSpec) -> np.ndarray:
    """The table row of the context (topic, t-2, t-1) (order 2) or (topic, t-1) (order 1): the context's index
    when all contexts fit, else a multiplicative hash of it (uint64 wraps by design)."""
    if s.order == 2:
        key = (topic.astype(np.uint64) * np.uint64(s.vocab) + a.astype(np.uint64)) * np.uint64(s.vocab)
    else:
        key = topic.astype(np.uint64) * np.uint64(s.vocab)
    key = key + b.astype(np.uint64)
    if s.topics * s.vocab**s.order <= s.contexts:
        return key
    return ((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) % np.uint64(s.contexts)


def _draws(rng: np.random.Generator, s: SyntheticSpec, steps: int, K: int) -> dict[str, np.ndarray]:
    """The random numbers of ``steps`` generation steps of ``K`` lanes, drawn at once: (steps, K) each."""
    lo, hi = np.log(s.copy_offset[0]), np.log(s.copy_offset[1])
    return {
        "new_doc": rng.random((steps, K)) < 1.0 / s.mean_doc,
        "topic": rng.integers(0, s.topics, (steps, K)),
        "copy": rng.random((steps, K)) < s.copy_prob,
        "offset": np.exp(rng.uniform(lo, hi, (steps, K))).astype(np.int64),
        "span": rng.integers(s.copy_span[0], s.copy_span[1] + 1, (steps, K)),
        "pick": rng.random((steps, K)),
    }


def synthetic_stream(n_tokens: int, seed: int, spec: SyntheticSpec = SyntheticSpec()) -> np.ndarray:
    """(n_tokens,) int32 token ids in [0, spec.vocab). Deterministic in (n_tokens, seed, spec).

    Generated in parallel lanes (each at least 2048 tokens, at most 1024 lanes) laid end to end, so the cost
    is one vectorised step per lane position (about 0.1 s per 100K tokens, 2 s per 10M)."""
    if n_tokens < 1:
        raise ValueError(f"synthetic_stream: n_tokens must be positive, got {n_tokens}")
    if spec.order not in (1, 2):
        raise ValueError(f"synthetic_stream: order must be 1 or 2, got {spec.order}")
    if min(spec.topics, spec.contexts, spec.vocab) < 1:
        raise ValueError(f"synthetic_stream: topics, contexts and vocab must be positive, got {spec}")
    s = spec
    rng = np.random.default_rng(seed)
    succ, cum = _successor_table(rng, s)
    K = int(max(1, min(1024, n_tokens // 2048)))
    L = -(-n_tokens // K)
    lanes = np.arange(K)
    buf = np.zeros((K, L), dtype=np.int32)
    topic, a, b, pos, copy_src, copy_left = (np.zeros(K, dtype=np.int64) for _ in range(6))
    for t in range(L):
        if t % 256 == 0:
            d = _draws(rng, s, min(256, L - t), K)
        r = t % 256
        new_doc = d["new_doc"][r] | (t == 0)
        topic = np.where(new_doc, d["topic"][r], topic)
        pos[new_doc] = 0
        copy_left[new_doc] = 0
        start = (copy_left == 0) & d["copy"][r] & (d["offset"][r] <= pos)
        copy_src = np.where(start, t - d["offset"][r], copy_src)
        copy_left = np.where(start, d["span"][r], copy_left)
        row = _context_row(topic, a, b, s)
        pick = (d["pick"][r][:, None] > cum[row]).sum(axis=1)
        tok = succ[row, np.minimum(pick, succ.shape[1] - 1)]
        copying = copy_left > 0
        tok[copying] = buf[lanes[copying], copy_src[copying]]
        copy_src += copying
        copy_left -= copying
        buf[:, t] = tok
        a, b, pos = b, tok.astype(np.int64), pos + 1
    return buf.reshape(-1)[:n_tokens]


# ----------------------------------------------------------------------------- natural English (option B)
_DROP = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"[ \t\r\f\v]+")
_LINES = re.compile(r"\n\s*\n+")


def html_text(markup: str) -> str:
    """Visible text of an HTML page: scripts and styles dropped, tags removed, entities decoded, blank runs
    collapsed (one blank line between paragraphs)."""
    text = html.unescape(_TAG.sub(" ", _DROP.sub(" ", markup)))
    text = "\n".join(_SPACE.sub(" ", line).strip() for line in text.splitlines())
    return _LINES.sub("\n\n", text).strip()


def find_english(roots: tuple[str | os.PathLike, ...] = ENGLISH_ROOTS) -> list[Path]:
    """The installed English sources under ``roots`` (sorted, each file once however many links reach it):
    Python documentation pages (``<root>/python3*/html/**/*.html``) and the GCIDE dictionary
    (``<root>/gcide.dict.dz`` or ``.dict``)."""
    found: dict[Path, Path] = {}  # resolved -> as found: python3/html is often a link to python3.X/html
    for root in map(Path, roots):
        for p in [*root.glob("python3*/html/**/*.html"), root / "gcide.dict.dz", root / "gcide.dict"]:
            if p.is_file():
                found.setdefault(p.resolve(), p)
    return sorted(found.values())


def _dictionary_documents(path: Path, entries_per_doc: int = 50) -> list[str]:
    """A dictd dictionary (dictzip is gzip-readable) cut into documents of ``entries_per_doc`` blank-line
    separated entries."""
    opener = gzip.open if path.suffix == ".dz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        entries = [e.strip() for e in _LINES.split(f.read()) if e.strip()]
    return ["\n\n".join(entries[i : i + entries_per_doc]) for i in range(0, len(entries), entries_per_doc)]


def load_english(files: list[Path], max_chars: int | None = None) -> list[str]:
    """Documents from ``find_english``'s files in order (one per HTML page, dictionary cut in groups of
    entries), empty ones dropped, stopping once ``max_chars`` characters are collected."""
    docs: list[str] = []
    total = 0
    for path in files:
        if max_chars is not None and total >= max_chars:
            break
        if path.suffix == ".html":
            new = [html_text(path.read_text(encoding="utf-8", errors="replace"))]
        else:
            new = _dictionary_documents(path)
        for doc in new:
            if doc and (max_chars is None or total < max_chars):
                docs.append(doc)
                total += len(doc)
    return docs


# ----------------------------------------------------------------------------- OpenWebText (the paper's)
def openwebtext_files(directory: str | os.PathLike) -> dict[str, list[str]]:
    """{datasets builder: sorted files} for the corpus files under ``directory`` (recursively)."""
    root = Path(directory)
    by_kind: dict[str, list[str]] = {}
    for f in sorted(root.rglob("*")):
        kind = OWT_SUFFIXES.get(f.suffix)
        if kind and f.is_file():
            by_kind.setdefault(kind, []).append(str(f))
    if not by_kind:
        raise FileNotFoundError(f"{root}: no OpenWebText files (expected {', '.join(OWT_SUFFIXES)} under it)")
    return by_kind


def load_openwebtext(directory: str | os.PathLike, max_docs: int | None = None) -> list[str]:
    """The non-empty documents of a local OpenWebText copy (``text`` column / one .txt file per document), the
    files of each kind in name order (kinds in the order their first file appears), at most ``max_docs``. A
    damaged file (empty, truncated, garbled, binary, without ``text``, a value that is not text) is a
    ValueError naming it and the line or row (``file_checks.text_records``)."""
    docs: list[str] = []
    for kind, files in openwebtext_files(directory).items():
        for path in files:
            docs += [t for t in text_records(path, kind) if t]
            if max_docs is not None and len(docs) >= max_docs:
                return docs[:max_docs]
    return docs
