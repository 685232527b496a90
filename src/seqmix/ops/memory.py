"""Peak memory of the tensors an op allocates, measured in-process and deterministically (CPU or GPU).

``PeakTensorMemory`` is a ``TorchDispatchMode``: every tensor an aten op returns inside the ``with`` block is
counted once per storage (views share it) until that storage is freed (a weak reference notices), so
``peak_bytes`` is the most bytes of live tensors created inside the block at any op boundary. Inputs made
before the block are not counted. It sees what ops return, not the scratch a fused kernel keeps to itself
(SDPA's fused CPU kernel: per-thread tiles, constant in T), and it needs no allocator statistics, so it works
on CPU where ``torch.cuda.max_memory_allocated`` has no counterpart and process RSS is noisy.

    with PeakTensorMemory() as mem:
        y = attention(x)
    mem.peak_bytes
"""

from __future__ import annotations

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class PeakTensorMemory(TorchDispatchMode):
    """Live and peak bytes of the tensor storages created by the ops run under it."""

    def __init__(self):
        super().__init__()
        self._live: dict[int, tuple[StorageWeakRef, int]] = {}  # storage address -> (weak ref, bytes)
        self.live_bytes = 0
        self.peak_bytes = 0

    def _release_dead(self) -> None:
        for key in [key for key, (ref, _) in self._live.items() if ref.expired()]:
            self.live_bytes -= self._live.pop(key)[1]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self._release_dead()
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key, size = storage.data_ptr(), storage.nbytes()
                if size and key not in self._live:
                    self._live[key] = (StorageWeakRef(storage), size)
                    self.live_bytes += size
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        return out
