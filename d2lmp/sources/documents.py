"""The documents the series cites: code repositories, vendor documents and datasheets, standards, library
documentation.

Data only: ``d2lmp.bibliography`` gathers these with the other sources into ``SOURCES`` and cites them.
"""

from __future__ import annotations

from d2lmp.sources.record import Source

__all__ = ["DOCUMENTS"]

_NV = "NVIDIA"
_PT = "PyTorch Contributors"
_NVLINK = "https://www.nvidia.com/en-us/data-center/nvlink/"
_S = Source
DOCUMENTS: tuple[Source, ...] = (
    # Code
    _S("bekman2024mlengineering", "Bekman, S.", "Machine Learning Engineering Open Book",
       "GitHub repository stas00/ml-engineering", "n.d.", "https://github.com/stas00/ml-engineering",
       "compute/accelerator/README.md, \"Maximum Achievable Matmul FLOPS comparison table\": the best mean BF16 "
       "(and FP8 e4m3) matmul TFLOPS found by a search over shapes, against the dense peak: A100 SXM 271.2 of 312 "
       "(86.9 %), H100 SXM 794.5 of 989 (80.3 %, \"H200 is the same\"); FP8: H100 SXM 1402.6 of 1979 (70.9 %), "
       "H200 SXM 1453.4 of 1979 (73.4 %)."),
    _S("krizhevsky_cuda_convnet", "Krizhevsky, A.",
       "cuda-convnet: High-performance C++/CUDA implementation of convolutional neural networks",
       "Google Code project (archived)", 2011, "https://code.google.com/archive/p/cuda-convnet/",
       "Example configuration `example-layers/layers-80sec.cfg`."),
    _S("krizhevsky_cuda_convnet2", "Krizhevsky, A.", "cuda-convnet2", "GitHub repository", 2014,
       "https://github.com/akrizhevsky/cuda-convnet2", "Convolution kernels in `cudaconv3/src/filter_acts.cu`."),
    _S("pylearn2_cuda_convnet", "LISA lab, Université de Montréal",
       "pylearn2.sandbox.cuda_convnet: Theano wrappers of cuda-convnet's kernels", "pylearn2, GitHub repository",
       2013, "https://github.com/lisa-lab/pylearn2/tree/master/pylearn2/sandbox/cuda_convnet",
       "Docstrings of `__init__.py` and `filter_acts.py`."),
    _S("megatron_lm_repo", "Megatron-LM Contributors",
       "Megatron-LM: GPU optimized techniques for training transformer models at-scale",
       "GitHub repository NVIDIA/Megatron-LM", "n.d.", "https://github.com/NVIDIA/Megatron-LM",
       "README, GPT-3 Example: 175B on 1,024 A100s with tensor 8 × pipeline 16, global batch 1,536, about 32 s an "
       "iteration, 138 teraFLOP/s per GPU; the configuration in `examples/gpt3/train_gpt3_175b_distributed.sh`. "
       "Performance Benchmarking (`images/model_table.png`): GPT models of 1.7B-462B on 48-6,144 H100s, their "
       "TP, PP, DP, batch, teraFLOP/s per GPU and MFU; Strong Scaling Results: GPT-3 on 96-4,608 H100s."),
    _S("megatron_core_parallel_code", "Megatron-LM Contributors",
       "Megatron Core: tensor-parallel random state and attention", "GitHub repository NVIDIA/Megatron-LM, main branch",
       2025, "https://github.com/NVIDIA/Megatron-LM/tree/main/megatron/core",
       "`tensor_parallel/random.py`, `model_parallel_cuda_manual_seed` and `CudaRNGStatesTracker`: the default "
       "random state (seed) is the same on every rank of a tensor-parallel group and serves dropout outside the "
       "split regions; the 'model-parallel-rng' state (seed + 2718 + tensor-parallel rank) differs from rank to rank "
       "and serves dropout inside them, entered with `get_cuda_rng_tracker().fork()`. `transformer/attention.py`: "
       "`num_query_groups_per_partition = divide(num_query_groups, world_size)`, so the tensor-parallel size must "
       "divide the number of key/value heads."),
    _S("llm_foundry_benchmarks", "MosaicML",
       "MPT Training Benchmarks", "GitHub repository mosaicml/llm-foundry, `scripts/train/benchmarking/README.md`",
       2024, "https://github.com/mosaicml/llm-foundry/blob/main/scripts/train/benchmarking/README.md",
       "Tables of the section Results: MFU, HFU and throughput of 216 PyTorch FSDP runs of MPT 125M-70B on 8-512 "
       "A100 40/80 GB and H100 GPUs, BF16 and FP8; section MFU: the FLOPs counted (6N per token plus attention)."),
    _S("torchtitan_benchmarks", "torchtitan Contributors",
       "torchtitan benchmarks: Llama 3.1 on H100 and H200", "GitHub repository pytorch/torchtitan, benchmarks/",
       "n.d.", "https://github.com/pytorch/torchtitan/tree/main/benchmarks",
       "`benchmarks/llama3_h100_202412_torchtitan.md` Tables 1-6: tokens/s per GPU and peak memory of Llama 3.1 8B, "
       "70B and 405B on 8-512 H100s (96 GB HBM2e, 500 W) with FSDP, TP, PP, CP and Float8; "
       "`benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md`: vanilla and async TP, BF16 and Float8; "
       "`benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md`: 8B on 32 and 64 H200s."),
    _S("bigscience_tr11", "BigScience Workshop", "tr11 BLOOM-176B ML: README and chronicles-prequel",
       "GitHub repository bigscience-workshop/bigscience, `train/tr11-176B-ml/`", 2022,
       "https://github.com/bigscience-workshop/bigscience/tree/master/train/tr11-176B-ml",
       "`README.md`: BLOOM-176B's layout (TP 4, PP 12, DP 8, MBS 2 on 384 A100 80GB) and measured TFLOPs (149.77 at "
       "GBS 2048); `chronicles-prequel.md`: the sweep of 3D layouts, shapes and batch sizes with memory and OOMs."),
    _S("megatron_bridge_performance", "NVIDIA NeMo Contributors",
       "Megatron Bridge: Performance", "NVIDIA NeMo Framework documentation; GitHub repository "
       "NVIDIA-NeMo/Megatron-Bridge, docs/", 2026, "https://docs.nvidia.com/nemo/megatron-bridge/latest/"
       "performance-summary.html",
       "`docs/performance-summary.md` and `docs/performance-summary-archive.md`: per NeMo container release "
       "(25.09-26.08), pre-training tokens/s and model TFLOP/s per GPU of Llama 3 8B/70B/405B, DeepSeek-V3, "
       "gpt-oss-120b and Qwen3 MoE models on DGX-H100, B200, B300, GB200 and GB300, with GBS, MBS, FSDP, TP, PP, CP, "
       "VP, EP and BF16/FP8 precision."),
    _S("nemo_performance", "NVIDIA NeMo Contributors",
       "NeMo Framework: Performance Benchmarks and Long Sequence Performance", "GitHub repository NVIDIA/NeMo, "
       "docs/source/performance/", 2024, "https://github.com/NVIDIA/NeMo/tree/main/docs/source/performance",
       "`performance_summary.md` (NeMo 24.07, DGX-H100, FP8): tokens/s and model TFLOP/s per GPU of GPT-3 5B-175B, "
       "Llama 2 7B-70B, Nemotron 8B-340B and Llama 3 8B/70B with GBS, MBS, TP, PP, CP, VP; "
       "`performance_long_sequence.md`: TFLOP/s per GPU of Llama 2 7B on H100 and Llama 3 8B on B200 at 4K-1M "
       "tokens, with and without context parallelism. Model shapes: `nemo/collections/llm/gpt/model/` (GPT, Llama, "
       "Nemotron, Qwen3, gpt-oss configs) and the vocabularies of `scripts/performance/llm/pretrain_*.py`."),
    _S("nanotron_repo", "Hugging Face", "nanotron: minimalistic large language model 3D-parallelism training",
       "GitHub repository huggingface/nanotron", "n.d.", "https://github.com/huggingface/nanotron",
       "`scripts/scaling_benchmarks.py`: the model shapes (layers, hidden, heads, MLP), vocabulary and KV heads of "
       "the Ultra-Scale Playbook's configuration sweep; `src/nanotron/models/llama.py` `get_flops`: the FLOPs per "
       "token behind its MFU; `examples/config_tiny_llama_bench.yaml` (BF16) and `models/llama.py` (FlashAttention), "
       "what the sweep ran with; `src/nanotron/parallel/tensor_parallel/functional.py` (commit 67c5ebb6): the "
       "column- and row-parallel linears' all-gathers and reduce-scatters under sequence parallelism, forward and "
       "backward; `src/nanotron/helpers.py` (67c5ebb6) `log_throughput` and `create_table_log`: the benchmark CSV, "
       "written on world rank 0, with \"Mem Alloc (GB)\" and \"Mem Res (GB)\", `torch.cuda.max_memory_allocated()` "
       "and `max_memory_reserved()` divided by `1024**3`; `src/nanotron/trainer.py` `training_step`: in the first "
       "five steps `log_memory` resets the peak statistics before and after the forward and backward passes."),
    _S("deepseek_v3_repo", "DeepSeek-AI", "DeepSeek-V3", "GitHub repository deepseek-ai/DeepSeek-V3", "n.d.",
       "https://github.com/deepseek-ai/DeepSeek-V3",
       "`inference/configs/config_671B.json`: DeepSeek-V3's shape (61 layers, width 7,168, 128 heads, MLA ranks, "
       "256 routed experts and 1 shared, 8 per token, 3 dense layers, vocabulary 129,280); `inference/model.py` "
       "(commit 9b4e978), the released model definition, has no dropout layer."),
    _S("meta_llama3_repo", "Meta", "Llama 3", "GitHub repository meta-llama/llama3", "n.d.",
       "https://github.com/meta-llama/llama3",
       "`llama/model.py` (commit a0940f9), the released Llama 3 model definition: attention, the SwiGLU feed-forward "
       "(`w2(F.silu(w1(x)) * w3(x))`) and RMSNorm blocks, with no dropout layer."),
    _S("mistral_inference_repo", "Mistral AI", "mistral-inference", "GitHub repository mistralai/mistral-inference",
       "n.d.", "https://github.com/mistralai/mistral-inference",
       "`src/mistral_inference/transformer.py`, `transformer_layers.py` and `moe.py` (commit 2557e12), the released "
       "Mistral and Mixtral model definitions: no dropout layer."),
    # NVIDIA documents
    _S("nvidia_cuda_graph_guide", _NV, "CUDA Graph Best Practice for PyTorch", "NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/dl-cuda-graph/cuda-graph-basics/cuda-graph.html",
       "Section \"CUDA Graph\", \"What is CUDA Graph?\": \"kernel launch overhead can significantly impact GPU "
       "performance, especially when the CPU cannot keep up with feeding work to the GPU\"; a graph launches many "
       "kernels \"as a single unit with a single submission from the CPU\"."),
    _S("nvidia_gtx580_specs", _NV, "GeForce GTX 580: Specifications", "NVIDIA product page", "n.d.",
       "https://www.geforce.com/hardware/desktop-gpus/geforce-gtx-580/specifications",
       "The GTX 580's specifications: CUDA cores, graphics and processor clocks, memory clock (2,004 MHz), memory "
       "interface and bandwidth, board power."),
    _S("nvidia_pascal_whitepaper", _NV, "NVIDIA Tesla P100 (Pascal GP100 architecture)", "NVIDIA whitepaper", 2016,
       "https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf",
       "The P100 (GP100): HBM2 and first-generation NVLink, four links per GPU."),
    _S("nvidia_volta_whitepaper", _NV, "NVIDIA Tesla V100 GPU Architecture", "NVIDIA whitepaper", 2017,
       "https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf",
       "The V100 (GV100): a 4,096-bit HBM2 interface at 900 GB/s, six NVLink 2 links of 25 GB/s per direction, peak "
       "FP32 and tensor throughput."),
    _S("nvidia_dgx1_v100_whitepaper", _NV, "NVIDIA DGX-1 With Tesla V100 System Architecture", "NVIDIA whitepaper",
       2017, "https://images.nvidia.com/content/pdf/dgx1-v100-system-architecture-whitepaper.pdf",
       "DGX-1 with eight 16 GB V100s and 512 GB of host memory, and the hybrid cube-mesh NVLink topology among its "
       "eight GPUs."),
    _S("nvidia_turing_whitepaper", _NV, "NVIDIA Turing GPU Architecture", "NVIDIA whitepaper", 2018,
       "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/"
       "NVIDIA-Turing-Architecture-Whitepaper.pdf",
       "Turing (TU102 in the RTX 2080 Ti: 4,352 CUDA cores, 1,545 MHz boost, 14 Gb/s GDDR6, two NVLink links of 100 "
       "GB/s in total; TU104's 256-bit memory interface)."),
    _S("nvidia_t4_datasheet", _NV, "NVIDIA T4 Tensor Core GPU", "NVIDIA datasheet", 2019,
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
       "The T4's specifications: 70 W, 16 GB GDDR6 (bandwidth rounded to 300 GB/s), FP32 and tensor FP16, INT8 and "
       "INT4 peak throughput."),
    _S("nvidia_ampere_whitepaper", _NV, "NVIDIA A100 Tensor Core GPU Architecture", "NVIDIA whitepaper", 2020,
       "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf",
       "The A100 (GA100): a 5,120-bit HBM2 interface, third-generation NVLink, and the TF32 tensor-core mode for "
       "FP32 matrix products."),
    _S("nvidia_a100_datasheet", _NV, "NVIDIA A100 Tensor Core GPU", "NVIDIA datasheet", 2021,
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
       "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
       "The A100's specifications table: memory and its bandwidth, peak FP32 and tensor throughput, NVLink and PCIe "
       "Gen4 bandwidth, board power."),
    _S("nvidia_hopper_whitepaper", _NV, "NVIDIA H100 Tensor Core GPU Architecture", "NVIDIA whitepaper", 2022,
       "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper",
       "The H100 (GH100): the SM's four processing blocks and FP32 lanes, a 5,120-bit HBM3 interface, "
       "fourth-generation NVLink (18 links), and NVLink SHARP in the NVSwitch."),
    _S("nvidia_h100_datasheet", _NV, "NVIDIA H100 Tensor Core GPU", "NVIDIA datasheet", 2022,
       "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
       "Tensor figures are quoted with 2:4 sparsity, twice the dense rate."),
    _S("nvidia_nvswitch_blog", _NV, "Upgrading Multi-GPU Interconnectivity with the Third-Generation NVIDIA NVSwitch",
       "NVIDIA Technical Blog", 2022,
       "https://developer.nvidia.com/blog/upgrading-multi-gpu-interconnectivity-with-the-third-generation-nvidia-nvswitch/",
       "Third-generation NVSwitch and fourth-generation NVLink: 900 GB/s per H100, the NVSwitch chips of an 8-GPU "
       "H100 system, and NVLink SHARP reductions in the switch."),
    _S("nvidia_h200_page", _NV, "NVIDIA H200 Tensor Core GPU", "NVIDIA product page", "n.d.",
       "https://www.nvidia.com/en-us/data-center/h200/",
       "Specifications table: 141 GB HBM3e at 4.8 TB/s, 67 TFLOPS FP32; tensor figures quoted with 2:4 sparsity "
       "(dense = half)."),
    _S("nvidia_nvlink_page", _NV, "NVLink and NVLink Switch", "NVIDIA product page", "n.d.", _NVLINK,
       "NVLink's bandwidth per GPU by generation, including the B200's fifth-generation NVLink."),
    # the key sorts after NVIDIA's other undated documents, so that their citations keep their letters
    _S("nvidia_web_hopper_architecture", _NV, "NVIDIA Hopper Architecture", "NVIDIA web page", "n.d.",
       "https://www.nvidia.com/en-sg/technologies/hopper-architecture/",
       "Fourth-generation NVLink: 900 GB/s bidirectional per GPU, \"over 7X the bandwidth of PCIe Gen5\"."),
    _S("nvidia_web_t4_page", _NV, "NVIDIA T4 Tensor Core GPU for AI Inference", "NVIDIA product page", "n.d.",
       "https://www.nvidia.com/en-us/data-center/tesla-t4/",
       "Specifications: GPU memory 16 GB GDDR6, bandwidth \"320+ GB/s\" (the datasheet rounds it to 300 GB/s); "
       "256-bit bus at 10 Gb/s per pin gives 320 GB/s."),
    _S("nvidia_v100_page", _NV, "NVIDIA V100 Tensor Core GPU", "NVIDIA product page", "n.d.",
       "https://www.nvidia.com/en-us/data-center/v100/",
       "Specifications, V100 SXM2 column: 32 GB or 16 GB HBM2, 900 GB/s, 125 tensor TFLOPS, NVLink 300 GB/s, 300 W."),
    _S("nvidia_ref_arch_basepod", _NV, "NVIDIA DGX BasePOD Reference Architecture: Core Components",
       "NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/"
       "core-components.html",
       "DGX H200 and H100 systems: eight GPUs, four OSFP ports serving eight single-port ConnectX-7 VPI, up to "
       "400 Gb/s InfiniBand/Ethernet."),
    _S("nvidia_cuda_programming_guide", _NV, "CUDA C++ Programming Guide", "NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/cuda/cuda-c-programming-guide/",
       "Warps of 32 threads (SIMT architecture), section Page-Locked Host Memory, and the warp matrix functions "
       "(int8 inputs, int32 accumulators)."),
    _S("nvidia_nccl_user_guide", _NV, "NCCL User Guide", "NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/index.html",
       "Sections Collective Operations, Point-to-point communication, Environment Variables "
       "(`NCCL_ALGO`, `NCCL_PROTO`) and Troubleshooting: Logging (`NCCL_DEBUG`: VERSION, WARN, INFO, TRACE; "
       "`NCCL_DEBUG_SUBSYS` filters by subsystem)."),
    _S("nvidia_nccl_config", "NVIDIA NCCL Contributors",
       "NCCL User Guide: nccl4py Configuration (NCCLConfig, mirroring ncclConfig_t)",
       "NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/nccl4py/configuration.html",
       "NCCLConfig's fields min_ctas and max_ctas (and cta_policy): how many CTAs, the thread blocks of NCCL's "
       "kernels, a communicator's collectives use; ncclConfig_t describes each field."),
    _S("nvidia_zero_cta_policy", _NV, "NCCL API Supported Flags", "NCCL User Guide, NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/flags.html",
       "Section NCCL Communicator CTA Policy Flags: NCCL_CTA_POLICY_EFFICIENCY uses the minimal number of CTAs (thread "
       "blocks) for decent performance, for applications that need better compute and communication overlap; "
       "NCCL_CTA_POLICY_ZERO uses zero CTAs whenever it can."),
    _S("nvidia_nccl_tests_performance", _NV, "Performance reported by NCCL tests (nccl-tests, doc/PERFORMANCE.md)",
       "GitHub repository NVIDIA/nccl-tests", "n.d.",
       "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md",
       "`doc/PERFORMANCE.md`: algorithm bandwidth (algbw) and bus bandwidth (busbw), the factor between them per "
       "collective (2(n−1)/n for all-reduce), comparable with the link speed."),
    _S("nvidia_nccl_2283_release", _NV, "NCCL Release 2.28.3", "NCCL Release Notes, NVIDIA documentation", 2025,
       "https://docs.nvidia.com/deeplearning/nccl/release-notes/rel_2-28-3.html",
       "New host collective APIs: ncclAlltoAll, ncclScatter, ncclGather."),
    _S("nvidia_nccl_tuner_header", _NV, "NCCL source: the tuner plugin header (src/include/plugin/nccl_tuner.h)",
       "GitHub repository NVIDIA/nccl, master branch", 2026,
       "https://github.com/NVIDIA/nccl/blob/master/src/include/plugin/nccl_tuner.h",
       "The algorithms NCCL's tuning model chooses among (NCCL_ALGO_*): Tree, Ring, CollNetDirect, CollNetChain, NVLS, "
       "NVLSTree and PAT; the protocols: LL, LL128 and Simple."),
    _S("harris2012transfers", "Harris, M.", "How to Optimize Data Transfers in CUDA C/C++", "NVIDIA Technical Blog",
       2012, "https://developer.nvidia.com/blog/how-optimize-data-transfers-cuda-cc/",
       "Section Pinned Host Memory: a transfer from pageable host memory first copies the data into a temporary "
       "page-locked (pinned) buffer, from which the device reads it."),
    _S("jeaugey2019nccl24", "Jeaugey, S.", "Massively Scale Your Deep Learning Training with NCCL 2.4",
       "NVIDIA Technical Blog", 2019, "https://developer.nvidia.com/blog/massively-scale-deep-learning-training-nccl-2-4/",
       "NCCL 2.4's double binary trees: two complementary trees keep full bandwidth while latency grows only "
       "logarithmically with the number of GPUs."),
    _S("jeaugey2019nccl25", "Jeaugey, S.", "NCCL 2.5.6-1 (release pull request)",
       "GitHub, NVIDIA/nccl pull request #255", 2019, "https://github.com/NVIDIA/nccl/pull/255",
       "Release notes: \"Add model-based tuning to switch between the different algorithms and protocols.\""),
    _S("jeaugey2024nvls_busbw", "Jeaugey, S.", "Comment on \"H100 all reduce performance is poor\"",
       "GitHub, NVIDIA/nccl-tests issue #212", 2024, "https://github.com/NVIDIA/nccl-tests/issues/212",
       "NCCL's maintainer, 2024-05-06: 450 GB/s is NVLink 4's line rate; with protocol overhead NCCL gets an "
       "effective 370 GB/s, seen as busbw in non-all-reduce operations or with NCCL_ALGO=RING; all-reduce uses NVLink "
       "SHARP by default, with which neither algbw nor busbw is the bandwidth on the wire; on 8 GPUs the peak busbw "
       "is about 480 GB/s (algbw about 275 GB/s)."),
    _S("nvidia_nccl_tuning", _NV, "NCCL 2.20.3-1 source: the tuning model (src/graph/tuning.cc)",
       "GitHub repository NVIDIA/nccl", 2024, "https://github.com/NVIDIA/nccl/blob/v2.20.3-1/src/graph/tuning.cc",
       "\"Latencies in us\": per-step hardware latency (hwLat) of a ring over NVLink 0.6 (LL), 1.9 (LL128), "
       "3.4 (Simple) µs, over PCIe 1.0, 2.5, 5.7 µs; plus a base latency per collective (ring: 6.6, 14.0, 8.4 µs). "
       "Later releases (2.30) keep these figures."),
    # Other vendors and standards bodies
    _S("azure_ai_benchmarking_h200", "Microsoft Azure", "Azure ND H200 v5 Benchmark Results",
       "AI Benchmarking Guide, GitHub repository Azure/AI-benchmarking-guide (Azure_Results/ND_H200_v5_results.md)",
       2024, "https://github.com/Azure/AI-benchmarking-guide/blob/7f20e5fa3b2f9a46d8404af1f6fb14b049d6d5cc/"
       "Azure_Results/ND_H200_v5_results.md",
       "Table 6, NCCL Bandwidth: all-reduce bus bandwidth, in place, NVLS algorithm, 1 KB to 8 GB, on one ND H200 v5 "
       "VM (8 H200 GPUs, NCCL 2.20.5); the command is in Benchmarks/NCCLBandwidth.py: NCCL_ALGO=NVLS "
       "all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40."),
    _S("intel_optimization_manual", "Intel", "Intel 64 and IA-32 Architectures Optimization Reference Manual",
       "Intel documentation", "n.d.",
       "https://www.intel.com/content/www/us/en/developer/articles/technical/intel64-and-ia32-architectures-optimization.html",
       "The FMA units and vector widths of Intel's cores, from which the FP32 lanes per core follow."),
    _S("intel_atx3_psu_guide", "Intel",
       "ATX Version 3 Multi Rail Desktop Platform Power Supply Design Guide, rev. 2.1a",
       "Intel document 336521", 2023,
       "https://edc.intel.com/content/www/us/en/design/ipla/software-development-platforms/client/platforms/"
       "alder-lake-desktop/atx-version-3-0-multi-rail-desktop-platform-power-supply-design-guide/2.1a/"
       "dc-output-current-required/",
       "The DC output currents a supply must deliver (the page at this address), including the large, fast load "
       "steps on the rails that feed graphics cards."),
    _S("clearesult_80plus", "CLEAResult", "80 PLUS Program Details", "80 PLUS certification program", "n.d.",
       "https://www.clearesult.com/80plus/program-details",
       "The efficiency each 80 PLUS level requires at 20 %, 50 % and 100 % load (Gold, 115 V internal: 87 %, 90 %, "
       "87 %)."),
    _S("pcisig_specifications", "PCI-SIG", "PCI Express Base Specifications", "PCI-SIG", "n.d.",
       "https://pcisig.com/specifications", "Transfer rate per lane and line encoding of each generation."),
    _S("google_bfloat16", "Google Cloud", "The bfloat16 numerical format", "Cloud TPU documentation", "n.d.",
       "https://cloud.google.com/tpu/docs/bfloat16",
       "bfloat16's layout: 1 sign bit, 8 exponent bits (FP32's range) and 7 mantissa bits."),
    # Library documentation
    _S("gloo_tcp_pair", "Gloo Contributors", "gloo/transport/tcp/pair.cc", "GitHub repository pytorch/gloo", "n.d.",
       "https://github.com/pytorch/gloo/blob/main/gloo/transport/tcp/pair.cc",
       "Pair::send sends a buffer at once only if the peer has announced a pending receive (NOTIFY_RECV_READY); "
       "otherwise it queues the send and tells the peer it is ready (NOTIFY_SEND_READY)."),
    _S("onednn_repo", "oneDNN Contributors", "oneDNN: oneAPI Deep Neural Network Library",
       "GitHub repository uxlfoundation/oneDNN", "n.d.", "https://github.com/uxlfoundation/oneDNN",
       "Performance library of deep-learning primitives; its README lists PyTorch among the applications using it."),
    _S("pytorch_elastic_agent_docs", _PT, "Elastic Agent (torch.distributed.elastic)", "PyTorch documentation", "n.d.",
       "https://docs.pytorch.org/docs/stable/elastic/agent.html",
       "Section Server: the agent launches and monitors the worker processes; upon detecting worker failures or "
       "unhealthiness it tears down all workers and restarts everyone (up to --max-restarts)."),
    _S("pytorch_ddp_docs_1_7", _PT, "torch.nn.parallel.DistributedDataParallel (PyTorch 1.7.0)",
       "PyTorch documentation", 2020,
       "https://pytorch.org/docs/1.7.0/generated/torch.nn.parallel.DistributedDataParallel.html",
       "Signature: bucket_cap_mb=25; later versions keep 25 MiB as the default."),
    _S("pytorch_amp_docs", _PT, "Automatic Mixed Precision package: torch.amp", "PyTorch documentation", "n.d.",
       "https://pytorch.org/docs/stable/amp.html",
       "torch.amp: autocast's lists of operations run in lower precision or in FP32, and GradScaler's dynamic loss "
       "scale (init_scale 2¹⁶)."),
    _S("pytorch_cuda_semantics", _PT, "CUDA semantics: TensorFloat-32 (TF32) on Ampere (and later) devices",
       "PyTorch documentation", "n.d.", "https://pytorch.org/docs/stable/notes/cuda.html",
       "Section TensorFloat-32 (TF32) on Ampere (and later) devices: the settings that allow or forbid TF32 in FP32 "
       "matrix products and convolutions."),
    _S("pytorch_cuda_memory_management", _PT, "CUDA semantics: Memory management", "PyTorch documentation", "n.d.",
       "https://docs.pytorch.org/docs/stable/notes/cuda.html#cuda-memory-management",
       "Section Memory management: \"PyTorch uses a caching memory allocator to speed up memory allocations\"; "
       "\"the unused memory managed by the allocator will still show as if used in nvidia-smi\"; "
       "`memory_allocated()` and `max_memory_allocated()` \"monitor memory occupied by tensors\", "
       "`memory_reserved()` and `max_memory_reserved()` \"the total amount of memory managed by the caching "
       "allocator\"."),
    _S("pytorch_lrn_docs", _PT, "torch.nn.LocalResponseNorm", "PyTorch documentation", "n.d.",
       "https://pytorch.org/docs/stable/generated/torch.nn.LocalResponseNorm.html",
       "LocalResponseNorm's formula: α is divided by the window size n."),
    _S("pytorch_pipelining_docs", _PT, "Pipeline Parallelism: torch.distributed.pipelining", "PyTorch documentation",
       "n.d.", "https://pytorch.org/docs/stable/distributed.pipelining.html",
       "torch.distributed.pipelining: stages cut from a model and the schedules it ships; marked alpha, its API "
       "subject to change."),
    _S("pytorch_tensor_parallel_docs", _PT, "Tensor Parallelism: torch.distributed.tensor.parallel",
       "PyTorch documentation", "n.d.", "https://pytorch.org/docs/stable/distributed.tensor.parallel.html",
       "ColwiseParallel and RowwiseParallel: DTensor's plans that split linear layers by columns and by rows."),
    _S("torchvision_alexnet_docs", _PT, "torchvision.models.alexnet (AlexNet_Weights.IMAGENET1K_V1)",
       "torchvision documentation", "n.d.",
       "https://pytorch.org/vision/stable/models/generated/torchvision.models.alexnet.html",
       "Weights metadata: `num_params` 61,100,840; `_ops` 0.714 GFLOPS."),
    _S("torchvision_alexnet_source", _PT, "torchvision/models/alexnet.py", "pytorch/vision, GitHub repository", "n.d.",
       "https://github.com/pytorch/vision/blob/main/torchvision/models/alexnet.py",
       "The layers: conv1 is `nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2)`; no `LocalResponseNorm`."),
    _S("perfetto_other_formats", "Perfetto Authors", "Visualizing external trace formats with Perfetto",
       "Perfetto documentation", "n.d.", "https://perfetto.dev/docs/getting-started/other-formats",
       "The Perfetto UI (ui.perfetto.dev) opens Chrome JSON traces, the format torch.profiler exports."),
    _S("zhang2021opt_10percent", "Zhang, S.; Roller, S.; Goyal, N.; Shleifer, S.; Ott, M.",
       "Update on 175B Training Run: 10% through", "metaseq repository, OPT chronicles (posted November 17, 2021)",
       2021, "https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/10_percent_update.md",
       "The 11.xx lineage's settings: batch 2M, FP32 Adam, 8x tensor parallelism; the switch to the 12.xx lineage."),
    _S("zhang2021opt_update", "Zhang, S.; Roller, S.; Goyal, N.; Shleifer, S.; Ott, M.",
       "Update on 175B Training Run: 27% through", "metaseq repository, OPT chronicles (posted December 3, 2021)",
       2021, "https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/27_percent_update.md",
       "40+ restarts in about two weeks, mostly hardware; a 1.6 TB checkpoint in 992 files of ~1.7 GB."),
    _S("zhang2022opt_final", "Zhang, S.; Roller, S.; Goyal, N.; Shleifer, S.", "175B Training Run Completed",
       "metaseq repository, OPT chronicles (posted January 7, 2022)", 2022,
       "https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/final_update.md",
       "On 1024 80 GB A100s: ~2 machines go down every day; ~90 restarts over the training of the model's lineage."),
    _S("pytorch_dcp_docs", _PT, "Distributed Checkpoint - torch.distributed.checkpoint", "PyTorch 2.13 documentation",
       2026, "https://docs.pytorch.org/docs/2.13/distributed.checkpoint.html", "Load-time resharding; async_save."),
    _S("pytorch_fully_shard_docs", _PT, "torch.distributed.fsdp.fully_shard", "PyTorch 2.13 documentation", 2026,
       "https://docs.pytorch.org/docs/2.13/distributed.fsdp.fully_shard.html",
       "FSDP2: DTensor-based dim-0 per-parameter sharding (each parameter chunked over the data-parallel workers), "
       "against FSDP1's flat-parameter sharding (a group of tensors flattened, concatenated and chunked together)."),
    _S("pytorch_fsdp_notes", _PT, "FSDP Notes", "PyTorch documentation (last updated June 2025)", 2025,
       "https://docs.pytorch.org/docs/stable/notes/fsdp.html",
       "FSDP Prefetch Nuances: implicit forward prefetching (all-gathers issued on a separate CUDA stream overlap the "
       "forward compute issued before them; the first all-gather overlaps nothing) and explicit forward prefetching "
       "(the next layer's all-gather issued before the current layer's forward compute, at the cost of holding its "
       "output while the current one is in use); backward prefetching likewise."),
    _S("wang2024asynctp", "Wang, Y.; He, H.; Wright, L.; Wehrstedt, L.; Liu, T.; Liang, W.",
       "[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism in PyTorch", "PyTorch Developer Forum",
       2024, "https://discuss.pytorch.org/t/distributed-w-torchtitan-introducing-async-tensor-parallelism-in-"
       "pytorch/209487",
       "TL;DR: up to about 29 % faster forward passes and 8 % faster end-to-end steps for Llama 3 7B (20 % and 8 % "
       "for 70B) in TorchTitan; Figure 1: tensor parallelism of a two-layer MLP as an all-gather of the sharded "
       "input, the sharded products, and a reduce-scatter of the partial sums."),
    _S("pytorch_distributed_debug_docs", _PT, "Debugging torch.distributed applications",
       "PyTorch 2.13 documentation (torch.distributed)", 2026,
       "https://docs.pytorch.org/docs/2.13/distributed.html#debugging-torch-distributed-applications",
       "TORCH_DISTRIBUTED_DEBUG=DETAIL checks that every rank runs the same collective with the same shapes."),
    _S("pytorch_nccl_env_docs", _PT, "PyTorch ProcessGroupNCCL Environment Variables", "PyTorch documentation", 2026,
       "https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html",
       "TORCH_NCCL_ASYNC_ERROR_HANDLING: what the watchdog does when it observes an error or a timeout (3, the "
       "default: tear the process down); TORCH_NCCL_DUMP_ON_TIMEOUT: dump the debug information (with "
       "TORCH_NCCL_TRACE_BUFFER_SIZE > 0) on a watchdog timeout."),
    _S("pandya2024flight_recorder", "Pandya, C.; Wang, J.", "Flight Recorder for Debugging Stuck Jobs",
       "PyTorch Tutorials", 2024, "https://docs.pytorch.org/tutorials/unstable/flight_recorder_tutorial.html",
       "Enabling Flight Recorder: TORCH_NCCL_TRACE_BUFFER_SIZE entries (default 2000) of recent collectives in a "
       "circular buffer, dumped one file per rank on a timeout with TORCH_NCCL_DUMP_ON_TIMEOUT; File Formats: each "
       "entry's operation, group, sequence number, sizes, dtypes, state and Python stack; An End-to-End Example: "
       "torchfrtrace names the collective that not all ranks joined and the missing ranks."),
    # Books and course notes
)
