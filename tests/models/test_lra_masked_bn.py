"""Masked BatchNorm of the LRA backbone (``lra_classifier``, ``mask_padding``): the statistics of a padded batch
come from its valid (non-PAD) positions only. Guards against the S4 code base's behaviour (statistics over pads
too), which made a sequence's logits depend on how much padding its batch carried."""

from __future__ import annotations

import torch

from seqmix.models.lra import ChannelBatchNorm, LRAClassifier


def test_masked_batchnorm_matches_a_hand_computation_on_the_valid_positions():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 3, dtype=torch.float64) * 3 + 1
    valid = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    x[~valid] = 1e3  # pads far from the data: any leak into the statistics shows
    norm = ChannelBatchNorm(3).double().train()
    y = norm(x, valid)

    kept = x[valid]  # (8, 3): the valid tokens only
    mean = kept.sum(0) / len(kept)
    var = ((kept - mean) ** 2).sum(0) / len(kept)  # biased: what normalises the batch
    expect = (x - mean) / torch.sqrt(var + norm.bn.eps)
    assert torch.allclose(y[valid], expect[valid], atol=1e-12)
    assert torch.equal(y[~valid], torch.zeros_like(y[~valid]))
    unbiased = var * len(kept) / (len(kept) - 1)  # the running variance gets the unbiased one (BatchNorm1d)
    assert torch.allclose(norm.bn.running_mean, 0.1 * mean, atol=1e-12)
    assert torch.allclose(norm.bn.running_var, 0.9 + 0.1 * unbiased, atol=1e-12)
    assert int(norm.bn.num_batches_tracked) == 1


def test_masked_batchnorm_eval_uses_running_statistics_everywhere():
    norm = ChannelBatchNorm(3).double().eval()
    norm.bn.running_mean.fill_(2.0)
    norm.bn.running_var.fill_(4.0)
    x = torch.randn(2, 4, 3, dtype=torch.float64)
    valid = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.allclose(norm(x, valid), (x - 2.0) / torch.sqrt(torch.tensor(4.0) + norm.bn.eps))


def _logits(mask_padding: bool, extra_pad: int) -> torch.Tensor:
    torch.manual_seed(0)
    model = LRAClassifier(
        d_model=16,
        n_layers=2,
        mixer={"name": "b2s6", "d_state": 4},
        vocab_size=20,
        num_classes=3,
        mask_padding=mask_padding,
    ).train()
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(1, 20, (3, 10), generator=gen)
    x[0, 7:] = 0
    x[1, 5:] = 0
    x = torch.cat([x, torch.zeros(3, extra_pad, dtype=torch.long)], 1)
    return model(x)


def test_logits_do_not_depend_on_the_amount_of_padding():
    """Training-mode logits with 0 or 6 extra PAD columns agree when masked, and differ with S4's statistics."""
    assert torch.allclose(_logits(True, 0), _logits(True, 6), atol=1e-6)
    assert not torch.allclose(_logits(False, 0), _logits(False, 6), atol=1e-3)


def test_unpadded_pixels_are_unchanged_by_the_option():
    torch.manual_seed(0)
    x = torch.randn(4, 12, 1)
    out = []
    for mask in (True, False):
        torch.manual_seed(0)
        model = LRAClassifier(
            d_model=8, n_layers=1, mixer={"name": "s4d", "d_state": 4}, d_in=1, num_classes=2, mask_padding=mask
        )
        out.append(model.train()(x))
    assert torch.equal(out[0], out[1])
