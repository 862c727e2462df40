"""d2lmp.model.cluster: the step time, throughput and memory of a dense transformer LM on a GPU cluster, and a planner.

Plain arithmetic, no torch. ``Transformer`` is ``d2lmp.model.transformer_accounting.Transformer`` (the one home of
the formulas); ``Cluster`` a sourced GPU preset and a GPU count; ``Plan`` the parallel layout;
``predict`` one step's time, throughput, FLOP rates and memory per GPU; ``plan`` ranks the layouts that fit
and says why the others lose. The modules, one job each: ``hardware`` (GPU presets), ``layout`` (a plan's
checks), ``memory``, ``steptime`` (the step's terms), ``efficiency`` (the fitted parameters), ``published``
(the published runs), ``calibration`` (the fit and the comparisons), ``planner``, ``presets`` (model
shapes), ``report`` (what the commands print) and ``comm_roofline`` (each strategy's FLOPs per byte sent against
a link's ridge).
"""

from d2lmp.model.cluster.efficiency import FITTED, Efficiency
from d2lmp.model.cluster.hardware import GPU_PRESETS, Cluster, gpu_preset
from d2lmp.model.cluster.layout import Plan
from d2lmp.model.cluster.planner import PlanReport, plan
from d2lmp.model.cluster.predict import Prediction, predict
from d2lmp.model.cluster.presets import MODEL_PRESETS, model_preset
from d2lmp.model.transformer_accounting import Transformer

__all__ = ["Transformer", "Cluster", "Plan", "predict", "plan", "Prediction", "PlanReport", "Efficiency", "FITTED",
           "GPU_PRESETS", "gpu_preset", "MODEL_PRESETS", "model_preset"]
