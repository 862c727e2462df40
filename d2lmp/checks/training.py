"""Self-check of notebook 08: training the small AlexNet on the GPU."""

from __future__ import annotations

import torch

from d2lmp.checks.result import NO_GPU, CheckResult
from d2lmp.config import pick

__all__ = ["CHECKS"]


def check_train_cuda(device: str | None, quick: bool) -> CheckResult:
    """A few training steps of the small AlexNet on the GPU: loss falls, GPU forward equals CPU forward."""
    from d2lmp.config import set_seed
    from d2lmp.data import load_digits
    from d2lmp.models import alexnet_small
    from d2lmp.train import train

    if device is None:
        return NO_GPU
    set_seed(0)
    data = load_digits(resize=32)
    model = alexnet_small().eval()
    x = data.x_test[:64]
    with torch.no_grad():
        cpu_out = model(x)
        gpu_out = model.to(device)(x.to(device)).cpu()
    same = torch.allclose(cpu_out, gpu_out, rtol=1e-3, atol=1e-4)
    train_loader, test_loader = data.loaders(batch_size=64)
    history = train(model, train_loader, test_loader, epochs=pick(10, 3), device=device, progress=False)
    falls = history.train_loss[-1] < history.train_loss[0]
    ok = same and falls
    return CheckResult("pass" if ok else "fail",
                       f"GPU forward {'equals' if same else 'DIFFERS from'} CPU; loss {history.train_loss[0]:.3f} → "
                       f"{history.train_loss[-1]:.3f}, test accuracy {history.final_test_acc:.1%} after "
                       f"{len(history.epoch)} epochs in {history.total_seconds:.1f} s",
                       dict(history=history.as_dict()))


CHECKS = [check_train_cuda]
