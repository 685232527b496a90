"""Figures 1 and 2 of the Sessa paper (schematics, spec §3.5): each panel of Figure 1 draws the routing the spec
names (the Transformer's single edge tau -> t, Mamba's chain, Sessa's every forward edge), both figures are
written as PNG and PDF, and each takes under 2 s. New with issue 13: on main neither artefact exists."""

from __future__ import annotations

import time

import pytest

from seqmix.papers.sessa import ARTEFACTS
from seqmix.papers.sessa.figures import count_paths, routing_edges


def test_routing_edges_per_panel():
    assert routing_edges("transformer") == [(0, 4)]
    assert routing_edges("mamba") == [(0, 1), (1, 2), (2, 3), (3, 4)]
    sessa = routing_edges("sessa")
    assert len(sessa) == 10 and all(j < i for j, i in sessa)  # all 5 * 4 / 2 forward edges
    with pytest.raises(ValueError, match="kind"):
        routing_edges("rnn")


def test_path_counts_by_hops():
    """One path of 1 hop (Transformer), one of 4 hops (Mamba), and binomially many for Sessa: C(3, k-1) paths
    of k hops, 2^3 = 8 in all (every subset of the 3 intermediate nodes)."""
    assert count_paths(routing_edges("transformer")) == {1: 1}
    assert count_paths(routing_edges("mamba")) == {4: 1}
    assert count_paths(routing_edges("sessa")) == {1: 1, 2: 3, 3: 3, 4: 1}
    assert sum(count_paths(routing_edges("sessa", 7), 7).values()) == 2**5


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """matplotlib imported and its fonts (mathtext included) loaded once, outside the timed calls."""
    import matplotlib.pyplot as plt

    from seqmix.report.plots import save

    fig, ax = plt.subplots()
    ax.text(0, 0, r"$\tau \to t$ $B_{fb}$")
    save(fig, tmp_path_factory.mktemp("warm") / "w")


@pytest.mark.parametrize("name", ["figure1", "figure2"])
def test_figure_written_as_png_and_pdf_quickly(name, tmp_path, warm):
    start = time.process_time()
    ARTEFACTS[name]({"paper": "sessa", "scale": "tiny", "name": name}, tmp_path)
    assert time.process_time() - start < 2.0
    for ext, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):
        data = (tmp_path / f"{name}.{ext}").read_bytes()
        assert data[:4] == magic and len(data) > 5000
