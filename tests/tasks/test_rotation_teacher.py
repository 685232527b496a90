"""The rotation-teacher task of the heads paper (Exp. I): how its evaluation runs the student. The metrics
themselves are checked against closed forms in tests/papers/heads/test_theory.py."""

from __future__ import annotations

import torch

from seqmix.models.bare import BareMixer
from seqmix.tasks.rotation_teacher import RotationTeacher


def test_evaluate_runs_the_student_in_eval_mode_without_gradients():
    """Both forwards (the test set, the Thm 4.2 probe) go through the base Task's ``predict``: eval mode, no
    gradients, and the caller's training mode back afterwards."""
    task = RotationTeacher(k=4, n=6, test_size=8)
    torch.manual_seed(0)
    student = BareMixer(d_in=4, d_out=4, seq_len=6, mixer={"name": "factorized_linear_attention", "heads": 2})
    calls = []
    student.register_forward_pre_hook(lambda m, args: calls.append((len(args[0]), m.training, torch.is_grad_enabled())))
    student.train()
    metrics = task.evaluate(student)
    assert calls == [(8, False, False), (1, False, False)] and student.training
    assert set(metrics) == set(RotationTeacher.summary_columns["evaluate"])
