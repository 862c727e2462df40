"""``d2lmp bench train``: train the small AlexNet on the offline digits, against its goals.

It reports the test accuracy and time against their goals (the measurement: ``train.train_small_alexnet``)."""

from __future__ import annotations

import argparse

from d2lmp import train
from d2lmp.commands.goal import Goal
from d2lmp.commands.options import need_positive
from d2lmp.timing import resolve_device

__all__ = ["HELP", "ACCURACY_GOAL", "SECONDS_GOAL", "add_options", "check", "run"]

HELP = "train the small AlexNet on the offline digits; accuracy and time"
ACCURACY_GOAL = 90.0  # percent of the test set, after the default 10 epochs
SECONDS_GOAL = 60.0  # the whole training run


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    parser.add_argument("--device", default=None, help="device (default: cuda:0 if present, else cpu)")


def check(args: argparse.Namespace) -> None:
    need_positive("--epochs", args.epochs)
    if args.device is not None:
        resolve_device(args.device)  # a device not present here is a ValueError before training starts


def run(args: argparse.Namespace) -> int:
    check(args)
    model, history, data = train.train_small_alexnet(epochs=args.epochs, device=args.device, progress=True)
    acc, seconds = history.final_test_acc, history.total_seconds
    print(f"small AlexNet (scaled down) on {data.name}, {history.device}: test accuracy {acc:.1%} "
          f"after {args.epochs} epochs in {seconds:.1f} s")
    print(Goal(f"test accuracy after {args.epochs} epochs", ">=", ACCURACY_GOAL, "%").line(100 * acc,
                                                                                          shown=f"{acc:.1%}"))
    print(Goal("training time", "<=", SECONDS_GOAL, " s").line(seconds, shown=f"{seconds:.1f} s"))
    return 0
