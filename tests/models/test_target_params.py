"""Matched parameter counts: ``model.target_params`` picks the width (models.sizing.width_for_target)."""

from __future__ import annotations

import pytest
import torch

from seqmix.models import build_model
from seqmix.models.sizing import count_parameters, width_for_target
from seqmix.tasks.symbolsoup import SymbolSoup


def _task():
    return SymbolSoup(train_size=20, val_size=20, test_size=20, min_tokens=23, max_tokens=40)


@pytest.mark.parametrize(
    "mixer", [{"name": "s4d", "d_state": 4}, {"name": "rope", "heads": 2}, {"name": "sessa", "heads": 2}]
)
def test_the_chosen_width_is_the_closest_count_of_all_widths(mixer):
    task = _task()
    cfg = {"name": "sequence_classifier", "d_model": 8, "n_layers": 1, "mixer": mixer, "target_params": 20000}
    model = build_model(cfg, task)
    got = count_parameters(model)
    # the oracle: every even width counted by building it for real
    counts = {}
    for d in range(2, 129, 2):
        try:
            counts[d] = count_parameters(build_model({**cfg, "target_params": None, "d_model": d}, task))
        except ValueError:
            pass
    best = min(counts, key=lambda d: (abs(counts[d] - 20000), d))
    assert got == counts[best]


def test_the_search_leaves_the_random_state_alone():
    task = _task()
    cfg = {"name": "sequence_classifier", "d_model": 8, "n_layers": 1, "mixer": {"name": "s4d"}, "target_params": 5000}
    torch.manual_seed(0)
    a = build_model(cfg, task)
    d = a.encoder.weight.shape[1]
    torch.manual_seed(0)
    b = build_model({**cfg, "target_params": None, "d_model": d}, task)
    for pa, pb in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(pa, pb)


def test_widths_the_model_refuses_are_skipped_and_a_bad_target_is_an_error():
    def build(d):
        if d % 6:
            raise ValueError("heads must divide d_model")
        return torch.nn.Linear(d, d)

    assert width_for_target(build, 36 * 36 + 36, widths=range(2, 100, 2)) == 36
    assert width_for_target(build, 10**9, widths=range(2, 100, 2)) == 96
    with pytest.raises(ValueError, match="positive"):
        width_for_target(build, 0)
    with pytest.raises(ValueError, match="no width"):
        width_for_target(lambda d: (_ for _ in ()).throw(ValueError("never")), 10, widths=range(2, 10, 2))
