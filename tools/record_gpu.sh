#!/usr/bin/env bash
# Re-record d2lmp/recorded/ and run the CUDA-only tests on a machine with one CUDA GPU or more.
#
#   tools/record_gpu.sh OUTDIR        (run from the repository root; PYTHON picks the interpreter)
#
# Writes into OUTDIR: info_<gpu>_<date>.txt, selfcheck_<gpu>_<date>.json, bench_matmul_<gpu>_<date>.txt
# (the three kinds of file d2lmp/recorded/ keeps), cuda_tests.txt (pytest's report) and
# nccl_listeners.txt (what an NCCL rank listens on, with launch's loopback default and with NCCL's own) and
# nccl_debug_<gpu>_<date>.txt (NCCL's NCCL_DEBUG=INFO log of our collectives on one NCCL rank per GPU).
# Each step runs even if an earlier one failed; the exit status is the number of failed steps.
set -u
out=${1:?usage: tools/record_gpu.sh OUTDIR}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
gpu=$($py -c "import torch; print(torch.cuda.get_device_name(0).split()[-1].lower())") || exit 1
day=$(date +%F)
failed=0
step() { echo "== $*"; "$@" || { failed=$((failed + 1)); echo "== failed: $*"; }; }

step $py -m d2lmp info > "$out/info_${gpu}_$day.txt"
step $py -m d2lmp selfcheck -o "$out/selfcheck_${gpu}_$day.json"
step $py -m d2lmp bench matmul --sizes 1024,4096,8192 --dtypes float32,bfloat16 --min-time 0.2 \
    > "$out/bench_matmul_${gpu}_$day.txt"
step $py -m pytest -p no:cacheprovider -q -rs tests/test_gpu.py tests/test_conv.py tests/test_train.py \
    tests/test_rendezvous.py tests/test_checks.py > "$out/cuda_tests.txt" 2>&1
step $py -m tools.nccl_listeners > "$out/nccl_listeners.txt" 2>&1
step $py -m tools.nccl_debug > "$out/nccl_debug_${gpu}_$day.txt" 2>&1
echo "== $failed step(s) failed"
exit $failed
