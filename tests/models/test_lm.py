"""Decoder LM, sequence classifier, the parameter-count helper and the associative-recall task."""

from __future__ import annotations

import pytest
import torch

from seqmix import registry
from seqmix.models.classifier import SequenceClassifier
from seqmix.models.lm import DecoderLM
from seqmix.models.sizing import count_parameters, fit_parameters, size_decoder_lm
from seqmix.ops.backends import backend_report
from seqmix.tasks.assoc_recall import IGNORE, AssocRecall


def test_lm_shapes_tied_head_and_backends():
    task = AssocRecall(pairs=3, keys=8, values=4)
    m = DecoderLM(
        **task.model_inputs(), d_model=16, n_layers=2, mixer={"name": "mamba2", "headdim": 8, "d_state": 4, "chunk": 4}
    )
    x, _ = task.batch(0, 0, 0, 2)
    assert m(x).shape == (2, task.seq_len, task.vocab_size)
    assert m.head.weight is m.embed.weight
    assert set(backend_report(m).values()) == {"reference"} and len(backend_report(m)) == 2
    with pytest.raises(ValueError, match="tokens"):
        m(torch.randn(2, 5, 16))


def test_lm_gated_block_and_token_angles():
    task = AssocRecall(pairs=2, keys=4, values=4)
    x, _ = task.batch(0, 0, 0, 2)
    for mixer, block in (
        ({"name": "sessa", "heads": 2}, "gated"),
        ({"name": "so2_learned_qkv", "heads": 2}, "residual_mlp"),
    ):
        m = DecoderLM(**task.model_inputs(), d_model=8, n_layers=1, mixer=mixer, block=block)
        assert m(x).shape == (2, 8, 8)
    assert m.blocks[0].mixer.needs_tokens and m.blocks[0].mixer.angle_table.shape == (8, 2 * 2)


def test_registered_models_build_through_registry():
    task = AssocRecall(pairs=2, keys=4, values=4)
    from seqmix.models import build_model

    m = build_model({"name": "decoder_lm", "d_model": 8, "n_layers": 1, "mixer": {"name": "rope", "heads": 2}}, task)
    assert isinstance(m, DecoderLM)
    assert {"decoder_lm", "sequence_classifier"} <= set(registry.names("model"))


def test_classifier_mean_pooling_respects_lengths():
    torch.manual_seed(0)
    m = SequenceClassifier(
        d_model=8,
        n_layers=1,
        vocab_size=10,
        num_classes=3,
        mixer={"name": "bidirectional", "mixer": {"name": "s6", "d_state": 2}},
    ).double()
    x = torch.randint(0, 10, (2, 7))
    lengths = torch.tensor([7, 4])
    out = m(x, lengths)
    out_short = m(x[1:, :4])
    assert out.shape == (2, 3) and torch.allclose(out[1], out_short[0], atol=1e-12)
    cont = SequenceClassifier(d_model=8, n_layers=1, d_in=1, num_classes=2, pooling="last", mixer={"name": "s4d"})
    assert cont(torch.randn(3, 9, 1)).shape == (3, 2)


@pytest.mark.parametrize(
    "mixer,target",
    [
        ({"name": "rope", "heads": 4}, 250_000),
        ({"name": "mamba2", "headdim": 16, "d_state": 16}, 400_000),
        ({"name": "b2s6", "blocks": 8, "d_state": 8}, 120_000),
        ({"name": "sessa", "heads": 4}, 300_000),
    ],
)
def test_size_to_target_within_one_percent(mixer, target):
    cfg = size_decoder_lm(target, vocab_size=100, n_layers=2, mixer=mixer, multiple_of=8)
    m = DecoderLM(vocab_size=100, **{k: v for k, v in cfg.items() if k != "parameters"})
    n = count_parameters(m)
    assert n == cfg["parameters"] and abs(n - target) / target <= 0.01


def test_size_helper_raises_when_unreachable():
    with pytest.raises(ValueError, match="target"):
        fit_parameters(lambda d_model: torch.nn.Linear(d_model, d_model), 1000, ("d_model", [8, 64]))


def test_count_parameters_counts_tied_weights_once():
    m = DecoderLM(vocab_size=50, d_model=8, n_layers=1, mixer={"name": "nope", "heads": 2})
    untied = DecoderLM(vocab_size=50, d_model=8, n_layers=1, mixer={"name": "nope", "heads": 2}, tie_embeddings=False)
    assert count_parameters(untied) - count_parameters(m) == 50 * 8


def test_assoc_recall_is_a_pure_function_of_seed_step_rank():
    t = AssocRecall(pairs=4, keys=16, values=8)
    a, b = t.batch(3, 7, 1, 5), t.batch(3, 7, 1, 5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(t.batch(3, 8, 1, 5)[0], a[0])
    x, y = a
    P = 4
    for row in range(5):
        kv = dict(zip(x[row, 0 : 2 * P : 2].tolist(), x[row, 1 : 2 * P : 2].tolist()))
        assert len(kv) == P  # distinct keys
        for i in range(P):
            q = int(x[row, 2 * P + 2 * i])
            assert int(y[row, 2 * P + 2 * i]) == kv[q] == int(x[row, 2 * P + 2 * i + 1])
    assert int((y != IGNORE).sum()) == 5 * P
    with pytest.raises(ValueError, match="keys"):
        AssocRecall(pairs=5, keys=4)


def test_random_rotation_layers_draw_independent_angles():
    m = DecoderLM(vocab_size=10, d_model=8, n_layers=2, mixer={"name": "so2_random_qk", "heads": 2})
    a, b = (blk.mixer for blk in m.blocks)
    assert not torch.equal(a._random_steps(1, 5), b._random_steps(1, 5))
