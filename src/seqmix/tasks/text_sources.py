"""Text already on the machine, and a seeded procedural language, for the byte-level B2S6 substitutes (b2s6 spec §7).

``find_text_files(roots)`` lists the files of the installed corpora that exist here, in a fixed order:

- ``cpython-stdlib``: the ``*.py`` sources of the running interpreter's standard library (site-packages and
  caches excluded), tens of MB on every machine that runs seqmix;
- ``python-docs``: ``/usr/share/doc/python3.*`` (NEWS, HISTORY, README, and the HTML or text manual when the
  ``python3-doc`` package is installed), gzip-compressed or not;
- ``dict-gcide``: the GNU Collaborative International Dictionary (``/usr/share/dictd/gcide.dict.dz``).

``roots`` maps a corpus name to a directory (tests pass their own). ``corpus_label`` names what was found, e.g.
"installed text: cpython-stdlib (substitute)"; with nothing found the callers fall back to ``ZipfLanguage``, a
seeded word-level Markov language (Zipf unigram frequencies, a preferred successor per word), labelled
"procedural-zipf-text (substitute)".
"""

from __future__ import annotations

import glob
import gzip
import math
import os
import random
import re
import sysconfig
from pathlib import Path

PROCEDURAL_LABEL = "procedural-zipf-text (substitute)"
_SUFFIXES = {
    "cpython-stdlib": (".py",),
    "python-docs": (".txt", ".rst", ".html", ".gz"),
    "dict-gcide": (".dz",),
}
_SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


def default_roots() -> dict[str, str]:
    # python3.11, not python3.12-venv (a package's changelog directory)
    docs = sorted(d for d in glob.glob("/usr/share/doc/python3.[0-9]*") if re.fullmatch(r"python3\.\d+", Path(d).name))
    return {
        "cpython-stdlib": sysconfig.get_paths()["stdlib"],
        "python-docs": docs[-1] if docs else "/usr/share/doc/python3",
        "dict-gcide": "/usr/share/dictd",
    }


def find_text_files(roots: dict[str, str | os.PathLike] | None = None) -> list[tuple[str, Path]]:
    """(corpus name, file) for every text file of the corpora present, sorted by corpus then relative path."""
    out = []
    for corpus, root in (roots or default_roots()).items():
        root = Path(root)
        if not root.is_dir():
            continue
        suffixes = _SUFFIXES.get(corpus, (".txt", ".py", ".gz"))
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            # is_file(): a dangling link (Debian doc directories have them) is no text file
            found += [Path(dirpath) / f for f in filenames if f.endswith(suffixes) and (Path(dirpath) / f).is_file()]
        if corpus == "dict-gcide":
            found = [f for f in found if f.name.startswith("gcide")]
        out += [(corpus, f) for f in sorted(found, key=lambda p: str(p.relative_to(root)))]
    return out


def corpus_label(files: list[tuple[str, Path]]) -> str:
    names = sorted({corpus for corpus, _ in files})
    return f"installed text: {'+'.join(names)} (substitute)" if names else PROCEDURAL_LABEL


def read_text_file(path: Path) -> bytes:
    """The file's bytes, decompressed when it is gzip or dictzip (magic bytes 1f 8b); b"" when unreadable."""
    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, gzip.BadGzipFile):
        return b""


class ZipfLanguage:
    """A seeded word-level Markov language over ``vocab`` pseudo-words.

    Word i has unigram weight 1 / (i + 1) ** 1.1; after a word, its preferred successor follows with
    probability ``p_follow``, else a unigram draw. ``profile`` reweights the unigram (a latent template of the
    retrieval substitute: each template favours its own ranks). Output is lowercase ASCII words, spaces and
    a full stop with newline every ~12 words."""

    def __init__(self, seed: int, vocab: int = 2000, p_follow: float = 0.4):
        rng = random.Random(f"zipf-language:{seed}")
        letters = "etaoinshrdlcumwfgypbvkjxqz"
        words: set[str] = set()
        while len(words) < vocab:
            n = rng.randint(2, 9)
            words.add("".join(letters[min(int(rng.expovariate(0.15)), 25)] for _ in range(n)))
        self.words = sorted(words, key=lambda w: (len(w), w))
        self.weights = [1.0 / (i + 1) ** 1.1 for i in range(vocab)]
        self.successor = [rng.randrange(vocab) for _ in range(vocab)]
        self.p_follow = p_follow

    def template_weights(self, template: int, strength: float = 3.0) -> list[float]:
        """Unigram weights of template ``template``: the Zipf ranks re-ordered by a template-seeded permutation,
        mixed with the shared Zipf law (``strength`` sets how far templates differ)."""
        perm = list(range(len(self.words)))
        random.Random(f"zipf-template:{template}").shuffle(perm)
        return [w + strength * self.weights[perm[i]] for i, w in enumerate(self.weights)]

    def text(self, rng: random.Random, n_bytes: int, weights: list[float] | None = None) -> bytes:
        """At least ``n_bytes`` bytes of text (cut to exactly ``n_bytes``)."""
        cum, total = [], 0.0
        for w in weights or self.weights:
            total += w
            cum.append(total)
        parts, size, prev, count = [], 0, None, 0
        while size < n_bytes:
            if prev is not None and rng.random() < self.p_follow:
                i = self.successor[prev]
            else:
                i = rng.choices(range(len(cum)), cum_weights=cum)[0]
            count += 1
            sep = ".\n" if count % max(4, int(math.ceil(rng.gauss(12, 3)))) == 0 else " "
            parts.append(self.words[i] + sep)
            size += len(parts[-1])
            prev = i
        return "".join(parts).encode()[:n_bytes]
