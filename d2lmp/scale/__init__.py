"""d2lmp.scale: the cluster model's public face, ``from d2lmp.scale import Transformer, Cluster, Plan, predict, plan``.

The model itself lives in ``d2lmp.model.cluster`` (torch-free, standard library only); this module only
re-exports its front door, so that readers' code and the README's examples keep one short import path.
"""

from d2lmp.model.cluster import (
    FITTED,
    GPU_PRESETS,
    MODEL_PRESETS,
    Cluster,
    Efficiency,
    Plan,
    PlanReport,
    Prediction,
    Transformer,
    gpu_preset,
    model_preset,
    plan,
    predict,
)

__all__ = ["Transformer", "Cluster", "Plan", "predict", "plan", "Prediction", "PlanReport", "Efficiency", "FITTED",
           "GPU_PRESETS", "gpu_preset", "MODEL_PRESETS", "model_preset"]
