"""The b2s6 backbones: the LRA classifier (b2s6 spec §2.5, registered ``lra_classifier``) on ListOps, Image and
Retrieval batches, the language model of b2s6 spec §2.7 (``decoder_lm`` + the ``mamba`` mixer with a swappable unit,
native pre-RMSNorm blocks) on ``byte_lm``, and the optimiser groups of b2s6 spec §2.9."""

from __future__ import annotations

import math

import pytest
import torch

from seqmix.capabilities import LayerStack
from seqmix.diagnostics.hooks import captured, embeddings_from
from seqmix.models import build_model
from seqmix.models.lra import LRAClassifier, pair_features
from seqmix.models.sizing import count_parameters
from seqmix.tasks.byte_lm import ByteLM
from seqmix.tasks.image_tasks import LRAImage
from seqmix.tasks.lra_tasks import LRAListOps, LRARetrieval
from seqmix.training.optim import build_optimizer, param_groups

UNIT = {"name": "b2s6", "blocks": 8, "d_state": 4}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("b2s6_models_cache"))


def _lra(task, **over):
    cfg = {"name": "lra_classifier", "d_model": 16, "n_layers": 2, "mixer": UNIT, **over}
    torch.manual_seed(0)
    return build_model(cfg, task)


def _train_step(model, task):
    """One forward/backward on a train batch: every trainable parameter gets a finite gradient."""
    x, y = task.batch(0, 0, 0, 4)
    loss = task.loss(model(x), y)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
    assert torch.isfinite(loss)
    missing = [n for n, g in grads.items() if g is None]
    assert not missing, f"no gradient reached {missing}"
    assert all(torch.isfinite(g).all() for g in grads.values())
    return x


@pytest.mark.parametrize(
    "over",
    [{}, {"prenorm": True, "norm": "layernorm", "dropout": 0.1}, {"bidirectional": False, "skip": False}],
)
def test_lra_classifier_trains_on_listops_batches(cache, over):
    """ListOps ids (B, L) with right padding: the model builds from the task's model_inputs and backpropagates."""
    task = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=48, cache_dir=cache)
    model = _lra(task, **over)
    x = _train_step(model, task)
    assert model(x).shape == (4, 10)


def test_lra_classifier_trains_on_pixel_sequences(cache):
    """lra_image (B, L, 1) float pixels go through the Linear encoder (no padding)."""
    task = LRAImage(source="digits", train_size=20, val_size=10, test_size=10, cache_dir=cache)
    model = _lra(task, norm="layernorm", n_layers=1)
    assert isinstance(model.encoder, torch.nn.Linear)
    _train_step(model, task)
    assert set(task.evaluate(model)) >= {"accuracy", "loss"}


@pytest.mark.parametrize("kind", ["tokens", "pixels"])
def test_lra_classifier_is_a_layer_stack(cache, kind):
    """capabilities.LayerStack: the encoder (Embedding of ids, Linear of pixels) gives the first hidden states,
    the blocks are the layers. Substituting the encoder's own output leaves the logits as they are; substituting
    another tensor changes them (the probes' hook reaches the forward)."""
    if kind == "tokens":
        task = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=48, cache_dir=cache)
    else:
        task = LRAImage(source="digits", image_size=8, train_size=20, val_size=10, test_size=10, cache_dir=cache)
    model = _lra(task).double().eval()
    assert isinstance(model, LayerStack)
    assert model.token_embedding() is model.encoder and model.layers() is model.blocks
    assert model.mixers() == [blk.mixer for blk in model.blocks]
    x, _ = task.batch(0, 0, 0, 3)
    x = x if kind == "tokens" else x.double()
    with torch.no_grad():
        e = model.token_embedding()(x)
        plain = model(x)
        with embeddings_from(model, e):
            torch.testing.assert_close(model(x), plain)
        with embeddings_from(model, e + 1.0), captured(list(model.layers()), "output") as outs:
            assert not torch.allclose(model(x), plain)
    assert all(o.shape == e.shape for o in outs)


def test_retrieval_pairs_run_through_shared_towers(cache):
    """(B, 2, L) pairs: one encoder for both documents, combined as [a, b, a*b, a-b]. Built from the retrieval
    task (n_documents 2), the logits equal the head applied to each document encoded on its own, and swapping the
    documents equals the head of the swapped features (guards the (2B, L) reshape order and weight sharing)."""
    task = LRARetrieval(source="procedural", train_size=20, val_size=10, test_size=10, max_len=40, cache_dir=cache)
    model = _lra(task, prenorm=True)
    _train_step(model, task)
    model.eval()
    x, _ = task.batch(0, 1, 0, 3)
    with torch.no_grad():
        a, b = model.encode(x[:, 0]), model.encode(x[:, 1])
        torch.testing.assert_close(model(x), model.head(pair_features(a, b)))
        torch.testing.assert_close(model(x.flip(1)), model.head(pair_features(b, a)))
    f_ab, f_ba = pair_features(a, b), pair_features(b, a)
    d = a.shape[1]
    torch.testing.assert_close(f_ba[:, 2 * d : 3 * d], f_ab[:, 2 * d : 3 * d])  # a*b is symmetric
    torch.testing.assert_close(f_ba[:, 3 * d :], -f_ab[:, 3 * d :])  # a-b flips sign


def test_single_document_model_refuses_pairs_and_left_padding(cache):
    """A (B, 2, L) pair fed to a one-document model, or PAD before real tokens, is refused by name."""
    task = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=48, cache_dir=cache)
    model = _lra(task)
    x, _ = task.batch(0, 0, 0, 2)
    with pytest.raises(ValueError, match="right-padded"):
        model(torch.cat((torch.zeros_like(x[:, :1]), x), dim=1))
    pairs = LRAClassifier(d_out=2, vocab_size=17, n_documents=2, d_model=8, n_layers=1, mixer=UNIT)
    with pytest.raises(ValueError, match=r"\(batch, 2, length\)"):
        pairs(x)


def test_padding_does_not_change_the_prediction(cache):
    """Mean pooling over valid positions and the bidirectional flip of the valid prefix: extra trailing PAD leaves
    the logits of a sequence unchanged (eval mode, BatchNorm on running statistics)."""
    task = LRAListOps(train_size=20, val_size=10, test_size=10, max_len=48, cache_dir=cache)
    model = _lra(task).double().eval()
    x, _ = task.batch(0, 0, 0, 4)
    n = int((x != 0).sum(-1).max())
    with torch.no_grad():
        short = model(x[:, :n])
        long = model(torch.cat((x, torch.zeros_like(x)), dim=1))
    torch.testing.assert_close(short, long)


def _b2s6_unit_params(d: int, n: int) -> int:
    """Spec §2.3: 2n (complex A) + h(2np + pn + p) + 2dn (B_bias) + d (b) = 2n + 5dn + 2d with d = h p."""
    return 2 * n + 5 * d * n + 2 * d


def test_parameter_count_matches_the_closed_form():
    """ListOps-like model: embedding V d; per layer two B2S6 units (bidirectional), D (d), GLU Linear(d, 2d)
    (2d^2 + 2d), BatchNorm (2d); head d K + K. Retrieval head: Linear(4d, h) + Linear(h, K)."""
    V, d, n, L, K = 17, 16, 4, 3, 10
    model = LRAClassifier(d_out=K, vocab_size=V, d_model=d, n_layers=L, mixer=UNIT)
    per_layer = 2 * _b2s6_unit_params(d, n) + d + (2 * d * d + 2 * d) + 2 * d
    assert count_parameters(model) == V * d + L * per_layer + d * K + K
    pairs = LRAClassifier(d_out=2, vocab_size=V, d_model=d, n_layers=L, mixer=UNIT, n_documents=2, prenorm=True)
    head = 4 * d * d + d + d * 2 + 2
    assert count_parameters(pairs) == V * d + L * per_layer + 2 * d + head  # + the final prenorm BatchNorm


def test_optimizer_groups_follow_spec_2_9(cache):
    """AdamW groups of the LRA model at ListOps (lr 0.008, wd 0.03) and Path-X (lr 0.001) settings: A and B_bias
    at lr 1e-3 without decay, the Delta parameters w, b at min(1e-3, 0.1 lr) without decay, the other matrices at
    the table's lr and wd."""
    model = LRAClassifier(d_out=10, vocab_size=17, d_model=16, n_layers=2, mixer=UNIT)
    for lr, lr_delta in ((0.008, 8e-4), (0.001, 1e-4)):
        rate = {}
        for g in param_groups(model, lr=lr, weight_decay=0.03):
            names = [n for n, p in model.named_parameters() if any(p is q for q in g["params"])]
            rate.update({n: (g["lr"], g["weight_decay"]) for n in names})
        unit = "blocks.1.mixer.bwd."
        assert rate[unit + "A.log_re"] == rate[unit + "A.im"] == (1e-3, 0.0)
        assert rate[unit + "B_bias"] == (1e-3, 0.0)
        assert rate[unit + "w"][0] == pytest.approx(lr_delta) and rate[unit + "b"][1] == 0.0
        assert rate[unit + "B_w"] == rate[unit + "C"] == rate["blocks.0.out.0.weight"] == (lr, 0.03)
        assert rate["blocks.0.D"] == rate["encoder.weight"] == rate["blocks.0.norm.bn.weight"] == (lr, 0.0)


@pytest.fixture(scope="module")
def byte_task(tmp_path_factory):
    return ByteLM(source="procedural", max_bytes=20_000, segment_len=32, cache_dir=str(tmp_path_factory.mktemp("b")))


@pytest.mark.parametrize("unit", ["s6", "b2s6", "s4d"])
def test_mamba_lm_with_a_swappable_unit_trains_on_bytes(byte_task, unit):
    """Spec §2.7: decoder_lm + mamba (pre-RMSNorm residual, in_proj -> conv -> SiLU -> unit -> * SiLU(z) ->
    out_proj, tied head). Only the unit's parameters differ between S6, B2S6 and S4D; the model is causal."""
    cfg = {"name": "decoder_lm", "d_model": 16, "n_layers": 2, "block": "native", "norm": "rmsnorm"}
    torch.manual_seed(0)
    model = build_model({**cfg, "mixer": {"name": "mamba", "unit": unit}}, byte_task)
    x = _train_step(model, byte_task)
    assert model.head.weight is model.embed.weight
    outside = sorted(n for n, _ in model.named_parameters() if ".unit." not in n)
    d, di, V = 16, 32, 256
    per_block = d + d * 2 * di + (di * 4 + di) + di * d  # RMSNorm, in_proj, depthwise conv, out_proj
    assert sum(p.numel() for n, p in model.named_parameters() if ".unit." not in n) == V * d + 2 * per_block + d
    assert "blocks.0.mixer.in_proj.weight" in outside and "blocks.1.norm1.weight" in outside
    with torch.no_grad():
        y = model(x[:1])
        x2 = x[:1].clone()
        x2[0, 20:] = (x2[0, 20:] + 1) % V
        torch.testing.assert_close(model(x2)[:, :20], y[:, :20])


def _rates(model, **kw) -> dict[str, tuple[float, float]]:
    ids = {id(p): n for n, p in model.named_parameters()}
    return {ids[id(p)]: (g["lr"], g["weight_decay"]) for g in param_groups(model, **kw) for p in g["params"]}


def test_config_param_hints_sweep_the_delta_rate():
    """train.param_hints (b2s6 spec §2.9 sweep of lr_Delta over {1e-3, 1e-4, 0}): a pattern's lr replaces the module's
    reduced rate (lr_mult/lr_max included), lr 0 freezes the Delta parameters through a real AdamW step, other
    parameters keep their groups, and a pattern that matches nothing is refused by its key."""
    torch.manual_seed(0)
    model = LRAClassifier(d_out=10, vocab_size=17, d_model=16, n_layers=1, mixer=UNIT)
    default = _rates(model, lr=0.008, weight_decay=0.03)
    for lr_delta in (1e-3, 1e-4, 0.0):
        hints = {"*.mixer.*.w": {"lr": lr_delta}, "*.mixer.*.b": {"lr": lr_delta}}
        rates = _rates(model, lr=0.008, weight_decay=0.03, config_hints=hints)
        changed = {n for n in rates if rates[n] != default[n]}
        assert rates["blocks.0.mixer.fwd.w"] == rates["blocks.0.mixer.bwd.b"] == (lr_delta, 0.0)
        assert changed <= {n for n in rates if n.endswith((".w", ".b"))}
    opt = build_optimizer(model, {"optimizer": "adamw", "lr": 0.008, "weight_decay": 0.03, "param_hints": hints})
    frozen = model.blocks[0].mixer.fwd.b.detach().clone()
    before_C = model.blocks[0].mixer.fwd.C.detach().clone()
    model(torch.randint(1, 17, (2, 12))).sum().backward()
    opt.step()
    assert torch.equal(model.blocks[0].mixer.fwd.b, frozen) and not torch.equal(model.blocks[0].mixer.fwd.C, before_C)
    with pytest.raises(ValueError, match=r"param_hints\['\*\.dt_bias'\].*matches no"):
        param_groups(model, lr=0.008, config_hints={"*.dt_bias": {"lr": 0.0}})


def test_train_schema_types_param_hints():
    """The paper schema's train block accepts param_hints with the hint keys and refuses any other key."""
    import jsonschema

    from seqmix.config.base import load_schema

    defs = load_schema("paper")["$defs"]
    schema = {"$defs": defs, **defs["train_partial"]}
    jsonschema.validate({"param_hints": {"*.w": {"lr": 1e-4, "weight_decay": 0}}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"param_hints": {"*.w": {"learning_rate": 1e-4}}}, schema)


def test_training_loop_runs_a_retrieval_leaf_with_frozen_delta(tmp_path):
    """A whole leaf through seqmix.training.loop: lra_classifier on lra_retrieval pairs, AdamW with the spec's
    groups and ``train.param_hints`` freezing the Delta parameters (lr 0): after training, every b equals its
    seeded initialisation while the other unit matrices moved."""
    from seqmix.io import config_hash
    from seqmix.training import loop

    task = {"name": "lra_retrieval", "source": "procedural", "train_size": 20, "val_size": 10, "test_size": 10}
    cfg = {
        "task": {**task, "max_len": 32, "cache_dir": str(tmp_path / "cache")},
        "model": {"name": "lra_classifier", "d_model": 16, "n_layers": 1, "prenorm": True, "mixer": UNIT},
        "train": {
            **{"optimizer": "adamw", "lr": 0.004, "weight_decay": 0.03, "schedule": "cosine", "steps": 3},
            **{"batch": 4, "checkpoint_every": 3, "log_every": 1, "dtype": "float32"},
            "param_hints": {"*.mixer.*.b": {"lr": 0.0}},
        },
        **{"eval": {}, "paper": "t", "experiment": "e", "variant": "v", "point": "-", "seed": 0, "sweep_value": None},
    }
    out = loop.train(cfg, tmp_path / "leaf", config_hash(cfg))
    assert all(map(math.isfinite, out["history"]["train_loss"]))
    _, init = loop.build(cfg)
    trained = torch.load(tmp_path / "leaf" / "model.pt", weights_only=True)
    for name, value in init.state_dict().items():
        if name.endswith("mixer.fwd.b") or name.endswith("mixer.bwd.b"):
            assert torch.equal(trained[name], value), name
        if name.endswith("mixer.fwd.C"):
            assert not torch.equal(trained[name], value)
