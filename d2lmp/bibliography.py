"""The project bibliography: every primary source the notebooks cite, and the markdown that cites it.

A notebook cites a source with a link to its anchor, ``[Huang et al., 2019](#ref-huang2019gpipe)``
(or, in running text, ``Huang et al. ([2019](#ref-huang2019gpipe))``), and ends with a References cell
made by ``references_markdown(cited_keys(text))``. ``tests/test_sources.py`` keeps the two in sync.
Authors are written ``"Surname, I.; Surname, I."``; an organisation is one name without a comma.
Undated living documents (documentation, product pages) have the year ``"n.d."``. Data tables
(``gpu_specs.NOTABLE_GPUS``, ``topology``'s link tables, the cost-model presets) name their sources by
key in a ``source`` field; ``sources_text`` prints them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Source", "SOURCES", "cite", "cite_text", "sources_text", "year_text", "references_markdown", "cited_keys"]


@dataclass(frozen=True)
class Source:
    """One primary source: a paper, a vendor document or datasheet, or a library's documentation."""

    key: str
    authors: str
    title: str
    venue: str
    year: int | str
    url: str
    note: str = ""


_NV = "NVIDIA"
_PT = "PyTorch Contributors"
_NVLINK = "https://www.nvidia.com/en-us/data-center/nvlink/"
_S = Source
_ENTRIES = (
    # Papers
    _S("krizhevsky2012imagenet", "Krizhevsky, A.; Sutskever, I.; Hinton, G. E.",
       "ImageNet Classification with Deep Convolutional Neural Networks",
       "Advances in Neural Information Processing Systems 25 (NIPS 2012)", 2012,
       "https://papers.nips.cc/paper_files/paper/2012/hash/c399862d3b9d6b76c8436e924a68c45b-Abstract.html"),
    _S("krizhevsky2014weird", "Krizhevsky, A.", "One weird trick for parallelizing convolutional neural networks",
       "arXiv:1404.5997", 2014, "https://arxiv.org/abs/1404.5997"),
    _S("buck2004brook", "Buck, I.; Foley, T.; Horn, D.; Sugerman, J.; Fatahalian, K.; Houston, M.; Hanrahan, P.",
       "Brook for GPUs: Stream Computing on Graphics Hardware", "ACM Transactions on Graphics 23(3) (SIGGRAPH 2004)",
       2004, "https://doi.org/10.1145/1015706.1015800"),
    _S("lindholm2008tesla", "Lindholm, E.; Nickolls, J.; Oberman, S.; Montrym, J.",
       "NVIDIA Tesla: A Unified Graphics and Computing Architecture", "IEEE Micro 28(2)", 2008,
       "https://doi.org/10.1109/MM.2008.31"),
    _S("nickolls2008cuda", "Nickolls, J.; Buck, I.; Garland, M.; Skadron, K.",
       "Scalable Parallel Programming with CUDA", "ACM Queue 6(2)", 2008, "https://doi.org/10.1145/1365490.1365500"),
    _S("raina2009gpu", "Raina, R.; Madhavan, A.; Ng, A. Y.",
       "Large-scale Deep Unsupervised Learning using Graphics Processors",
       "Proceedings of the 26th International Conference on Machine Learning (ICML 2009)", 2009,
       "https://doi.org/10.1145/1553374.1553486"),
    _S("ciresan2010deep", "Cireşan, D. C.; Meier, U.; Gambardella, L. M.; Schmidhuber, J.",
       "Deep, Big, Simple Neural Nets Excel on Handwritten Digit Recognition",
       "Neural Computation 22(12); arXiv:1003.0358", 2010, "https://arxiv.org/abs/1003.0358"),
    _S("dalal2005hog", "Dalal, N.; Triggs, B.", "Histograms of Oriented Gradients for Human Detection",
       "IEEE Conference on Computer Vision and Pattern Recognition (CVPR 2005)", 2005,
       "https://doi.org/10.1109/CVPR.2005.177"),
    _S("lecun1998gradient", "LeCun, Y.; Bottou, L.; Bengio, Y.; Haffner, P.",
       "Gradient-Based Learning Applied to Document Recognition", "Proceedings of the IEEE 86(11)", 1998,
       "https://doi.org/10.1109/5.726791"),
    _S("williams2009roofline", "Williams, S.; Waterman, A.; Patterson, D.",
       "Roofline: An Insightful Visual Performance Model for Multicore Architectures",
       "Communications of the ACM 52(4)", 2009, "https://doi.org/10.1145/1498765.1498785"),
    _S("amdahl1967validity", "Amdahl, G. M.",
       "Validity of the single processor approach to achieving large scale computing capabilities",
       "AFIPS Spring Joint Computer Conference", 1967, "https://doi.org/10.1145/1465482.1465560"),
    _S("chandrakasan1992lowpower", "Chandrakasan, A. P.; Sheng, S.; Brodersen, R. W.", "Low-Power CMOS Digital Design",
       "IEEE Journal of Solid-State Circuits 27(4)", 1992, "https://doi.org/10.1109/4.126534"),
    _S("greaves2011soc", "Greaves, D. J.", "System-on-Chip Design and Modelling (lecture notes)",
       "University of Cambridge Computer Laboratory", "2010–11",
       "https://www.cl.cam.ac.uk/teaching/1011/SysOnChip/socdam-notes1011.pdf"),
    _S("micikevicius2018mixed", "Micikevicius, P.; Narang, S.; Alben, J.; Diamos, G.; Elsen, E.; Garcia, D.; "
       "Ginsburg, B.; Houston, M.; Kuchaiev, O.; Venkatesh, G.; Wu, H.", "Mixed Precision Training",
       "International Conference on Learning Representations (ICLR 2018); arXiv:1710.03740", 2018,
       "https://arxiv.org/abs/1710.03740"),
    _S("kingma2015adam", "Kingma, D. P.; Ba, J.", "Adam: A Method for Stochastic Optimization",
       "International Conference on Learning Representations (ICLR 2015); arXiv:1412.6980", 2015,
       "https://arxiv.org/abs/1412.6980", "Algorithm 1: a first moment m and a second moment v per parameter."),
    _S("sutskever2013momentum", "Sutskever, I.; Martens, J.; Dahl, G.; Hinton, G.",
       "On the importance of initialization and momentum in deep learning",
       "Proceedings of the 30th International Conference on Machine Learning (ICML 2013), PMLR 28(3)", 2013,
       "https://proceedings.mlr.press/v28/sutskever13.html",
       "Classical momentum keeps one velocity v per parameter; plain SGD keeps none."),
    _S("ieee754_2019", "IEEE", "IEEE Standard for Floating-Point Arithmetic (IEEE Std 754-2019)", "IEEE", 2019,
       "https://doi.org/10.1109/IEEESTD.2019.8766229"),
    _S("jia2014caffe", "Jia, Y.; Shelhamer, E.; Donahue, J.; Karayev, S.; Long, J.; Girshick, R.; Guadarrama, S.; "
       "Darrell, T.", "Caffe: Convolutional Architecture for Fast Feature Embedding",
       "ACM Multimedia 2014; arXiv:1408.5093", 2014, "https://arxiv.org/abs/1408.5093"),
    _S("chetlur2014cudnn", "Chetlur, S.; Woolley, C.; Vandermersch, P.; Cohen, J.; Tran, J.; Catanzaro, B.; "
       "Shelhamer, E.", "cuDNN: Efficient Primitives for Deep Learning", "arXiv:1410.0759", 2014,
       "https://arxiv.org/abs/1410.0759"),
    _S("lavin2016winograd", "Lavin, A.; Gray, S.", "Fast Algorithms for Convolutional Neural Networks",
       "IEEE Conference on Computer Vision and Pattern Recognition (CVPR 2016); arXiv:1509.09308", 2016,
       "https://arxiv.org/abs/1509.09308"),
    _S("mathieu2014fft", "Mathieu, M.; Henaff, M.; LeCun, Y.", "Fast Training of Convolutional Networks through FFTs",
       "International Conference on Learning Representations (ICLR 2014); arXiv:1312.5851", 2014,
       "https://arxiv.org/abs/1312.5851"),
    _S("huang2019gpipe", "Huang, Y.; Cheng, Y.; Bapna, A.; Firat, O.; Chen, M. X.; Chen, D.; Lee, H.; Ngiam, J.; "
       "Le, Q. V.; Wu, Y.; Chen, Z.", "GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism",
       "Advances in Neural Information Processing Systems 32 (NeurIPS 2019); arXiv:1811.06965", 2019,
       "https://arxiv.org/abs/1811.06965"),
    _S("narayanan2021memory", "Narayanan, D.; Phanishayee, A.; Shi, K.; Chen, X.; Zaharia, M.",
       "Memory-Efficient Pipeline-Parallel DNN Training",
       "International Conference on Machine Learning (ICML 2021); arXiv:2006.09503", 2021,
       "https://arxiv.org/abs/2006.09503", "Introduces PipeDream-Flush, the 1F1B schedule with a flush."),
    _S("narayanan2021efficient", "Narayanan, D.; Shoeybi, M.; Casper, J.; LeGresley, P.; Patwary, M.; Korthikanti, V.; "
       "Vainbrand, D.; Kashinkunti, P.; Bernauer, J.; Catanzaro, B.; Phanishayee, A.; Zaharia, M.",
       "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
       "International Conference for High Performance Computing, Networking, Storage and Analysis (SC21); "
       "arXiv:2104.04473", 2021, "https://arxiv.org/abs/2104.04473",
       "Parameters and FLOPs per step in §5.1; ten GPT runs on up to 3,072 A100s in Table 1; interleaved 1F1B."),
    _S("qi2024zero", "Qi, P.; Wan, X.; Huang, G.; Lin, M.", "Zero Bubble Pipeline Parallelism",
       "The Twelfth International Conference on Learning Representations (ICLR 2024); arXiv:2401.10241", 2024,
       "https://arxiv.org/abs/2401.10241",
       "Splits each backward into B (input gradient) and W (weight gradient); the ZB-H1 schedule."),
    _S("korthikanti2022reducing", "Korthikanti, V.; Casper, J.; Lym, S.; McAfee, L.; Andersch, M.; Shoeybi, M.; "
       "Catanzaro, B.", "Reducing Activation Recomputation in Large Transformer Models",
       "Proceedings of Machine Learning and Systems 5 (MLSys 2023); arXiv:2205.05198", 2022,
       "https://arxiv.org/abs/2205.05198",
       "Saved activation bytes per layer in §4 (eq. 1-5); sequence parallelism; selective recomputation."),
    _S("liu2023ring", "Liu, H.; Zaharia, M.; Abbeel, P.",
       "Ring Attention with Blockwise Transformers for Near-Infinite Context",
       "International Conference on Learning Representations (ICLR 2024); arXiv:2310.01889", 2023,
       "https://arxiv.org/abs/2310.01889",
       "K/V blocks passed round a ring while each device computes blockwise attention; backward runs the ring again."),
    _S("milakov2018online", "Milakov, M.; Gimelshein, N.", "Online normalizer calculation for softmax",
       "arXiv:1805.02867", 2018, "https://arxiv.org/abs/1805.02867",
       "The running maximum and sum that merge partial softmaxes."),
    _S("dao2022flashattention", "Dao, T.; Fu, D. Y.; Ermon, S.; Rudra, A.; Ré, C.",
       "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
       "Advances in Neural Information Processing Systems 35 (NeurIPS 2022); arXiv:2205.14135", 2022,
       "https://arxiv.org/abs/2205.14135", "Tiled attention, the score matrix never kept; backward recomputes it."),
    _S("dao2023flashattention2", "Dao, T.",
       "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", "arXiv:2307.08691", 2023,
       "https://arxiv.org/abs/2307.08691", "The backward pass from the saved log-sum-exp alone."),
    _S("dubey2024llama3", "Dubey, A.; Jauhri, A.; Pandey, A.; Kadian, A.; Al-Dahle, A.; Letman, A.; Mathur, A.",
       "The Llama 3 Herd of Models", "arXiv:2407.21783", 2024, "https://arxiv.org/abs/2407.21783",
       "Llama Team, AI @ Meta. Table 3: the 8B, 70B and 405B shapes; §3.3.2: context parallelism, rank i holding "
       "chunks i and 2·CP−1−i of 2·CP; §3.3.4: job interruptions during pre-training."),
    _S("brown2020language", "Brown, T. B.; Mann, B.; Ryder, N.; Subbiah, M.; Kaplan, J.; Dhariwal, P.; "
       "Neelakantan, A.; Shyam, P.; Sastry, G.; Askell, A.; Agarwal, S.; Herbert-Voss, A.; Krueger, G.; Henighan, T.; "
       "Child, R.; Ramesh, A.; Ziegler, D. M.; Wu, J.; Winter, C.; Hesse, C.; Chen, M.; Sigler, E.; Litwin, M.; "
       "Gray, S.; Chess, B.; Clark, J.; Berner, C.; McCandlish, S.; Radford, A.; Sutskever, I.; Amodei, D.",
       "Language Models are Few-Shot Learners",
       "Advances in Neural Information Processing Systems 33 (NeurIPS 2020); arXiv:2005.14165", 2020,
       "https://arxiv.org/abs/2005.14165",
       "Table 2.1: the shapes of the GPT-3 models (175B: 96 layers, d_model 12288, 96 heads, context 2048)."),
    _S("radford2018improving", "Radford, A.; Narasimhan, K.; Salimans, T.; Sutskever, I.",
       "Improving Language Understanding by Generative Pre-Training", "OpenAI technical report", 2018,
       "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf",
       "GPT: a decoder-only transformer with learned positions, GELU, weights initialised from N(0, 0.02)."),
    _S("radford2019language", "Radford, A.; Wu, J.; Child, R.; Luan, D.; Amodei, D.; Sutskever, I.",
       "Language Models are Unsupervised Multitask Learners", "OpenAI technical report", 2019,
       "https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf",
       "GPT-2: LayerNorm at each sub-block's input and after the last block; residual weights scaled by 1/√N."),
    _S("karpathy_nanogpt", "Karpathy, A.", "nanoGPT", "GitHub repository karpathy/nanoGPT", "n.d.",
       "https://github.com/karpathy/nanoGPT"),
    _S("young1974first", "Young, J. W.", "A first order approximation to the optimum checkpoint interval",
       "Communications of the ACM 17(9)", 1974, "https://doi.org/10.1145/361147.361115", "Poisson failures: √(2δM)."),
    _S("daly2006higher", "Daly, J. T.", "A higher order estimate of the optimum checkpoint interval for restart dumps",
       "Future Generation Computer Systems 22(3)", 2006, "https://doi.org/10.1016/j.future.2004.11.016",
       "Figs. 3-5: τ_opt = 117, 57, 9.1 min for M = 24 h, 6 h, 15 min (δ = 5 min, R = 10 min)."),
    _S("kokolis2025reliability", "Kokolis, A.; Kuchnik, M.; Hoffman, J.; Kumar, A.; Malani, P.; Ma, F.; DeVito, Z.; "
       "Sengupta, S.; Saladi, K.; Wu, C.-J.", "Revisiting Reliability in Large-Scale Machine Learning "
       "Research Clusters", "IEEE HPCA 2025; arXiv:2410.21680", 2025, "https://arxiv.org/abs/2410.21680",
       "11 months, 4 million jobs, over 150 million A100 GPU-hours; MTTF falls as a job's GPUs grow."),
    _S("zhang2021opt_update", "Zhang, S.; Roller, S.; Goyal, N.; Shleifer, S.; Ott, M.",
       "Update on 175B Training Run: 27% through", "metaseq repository, OPT chronicles (posted December 3, 2021)",
       2021, "https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/27_percent_update.md",
       "40+ restarts in about two weeks, mostly hardware; a 1.6 TB checkpoint in 992 files of ~1.7 GB."),
    _S("zhang2022opt_final", "Zhang, S.; Roller, S.; Goyal, N.; Shleifer, S.", "175B Training Run Completed",
       "metaseq repository, OPT chronicles (posted January 7, 2022)", 2022,
       "https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/final_update.md",
       "On 1024 80 GB A100s: ~2 machines go down every day; ~90 restarts over the training of the model's lineage."),
    _S("shoeybi2019megatron", "Shoeybi, M.; Patwary, M.; Puri, R.; LeGresley, P.; Casper, J.; Catanzaro, B.",
       "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism", "arXiv:1909.08053",
       2019, "https://arxiv.org/abs/1909.08053"),
    _S("li2020pytorchddp", "Li, S.; Zhao, Y.; Varma, R.; Salpekar, O.; Noordhuis, P.; Li, T.; Paszke, A.; Smith, J.; "
       "Vaughan, B.; Damania, P.; Chintala, S.",
       "PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
       "Proceedings of the VLDB Endowment 13(12)", 2020, "https://doi.org/10.14778/3415478.3415530"),
    _S("rajbhandari2020zero", "Rajbhandari, S.; Rasley, J.; Ruwase, O.; He, Y.",
       "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
       "International Conference for High Performance Computing, Networking, Storage and Analysis (SC20); "
       "arXiv:1910.02054", 2020, "https://arxiv.org/abs/1910.02054"),
    _S("zhao2023fsdp", "Zhao, Y.; Gu, A.; Varma, R.; Luo, L.; Huang, C.-C.; Xu, M.; Wright, L.; Shojanazeri, H.; "
       "Ott, M.; Shleifer, S.; Desmaison, A.; Balioglu, C.; Damania, P.; Nguyen, B.; Chauhan, G.; Hao, Y.; "
       "Mathews, A.; Li, S.",
       "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
       "Proceedings of the VLDB Endowment 16(12); arXiv:2304.11277", 2023, "https://arxiv.org/abs/2304.11277"),
    _S("chen2016sublinear", "Chen, T.; Xu, B.; Zhang, C.; Guestrin, C.",
       "Training Deep Nets with Sublinear Memory Cost", "arXiv:1604.06174", 2016, "https://arxiv.org/abs/1604.06174"),
    _S("patarasuk2009bandwidth", "Patarasuk, P.; Yuan, X.",
       "Bandwidth optimal all-reduce algorithms for clusters of workstations",
       "Journal of Parallel and Distributed Computing 69(2)", 2009, "https://doi.org/10.1016/j.jpdc.2008.09.002"),
    _S("thakur2005collective", "Thakur, R.; Rabenseifner, R.; Gropp, W.",
       "Optimization of Collective Communication Operations in MPICH",
       "International Journal of High Performance Computing Applications 19(1)", 2005,
       "https://doi.org/10.1177/1094342005051521"),
    # Books and course texts
    _S("zhang2023d2l_alexnet", "Zhang, A.; Lipton, Z. C.; Li, M.; Smola, A. J.",
       "Dive into Deep Learning: Deep Convolutional Neural Networks (AlexNet)", "Cambridge University Press", 2023,
       "https://d2l.ai/chapter_convolutional-modern/alexnet.html"),
    _S("zhang2023d2l_hardware", "Zhang, A.; Lipton, Z. C.; Li, M.; Smola, A. J.", "Dive into Deep Learning: Hardware",
       "Cambridge University Press", 2023, "https://d2l.ai/chapter_computational-performance/hardware.html"),
    # Code
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
    # NVIDIA documents
    _S("nvidia_gtx580_specs", _NV, "GeForce GTX 580: Specifications", "NVIDIA product page", "n.d.",
       "https://www.geforce.com/hardware/desktop-gpus/geforce-gtx-580/specifications"),
    _S("nvidia_pascal_whitepaper", _NV, "NVIDIA Tesla P100 (Pascal GP100 architecture)", "NVIDIA whitepaper", 2016,
       "https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf"),
    _S("nvidia_volta_whitepaper", _NV, "NVIDIA Tesla V100 GPU Architecture", "NVIDIA whitepaper", 2017,
       "https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf"),
    _S("nvidia_dgx1_v100_whitepaper", _NV, "NVIDIA DGX-1 With Tesla V100 System Architecture", "NVIDIA whitepaper",
       2017, "https://images.nvidia.com/content/pdf/dgx1-v100-system-architecture-whitepaper.pdf"),
    _S("nvidia_turing_whitepaper", _NV, "NVIDIA Turing GPU Architecture", "NVIDIA whitepaper", 2018,
       "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/"
       "NVIDIA-Turing-Architecture-Whitepaper.pdf"),
    _S("nvidia_t4_datasheet", _NV, "NVIDIA T4 Tensor Core GPU", "NVIDIA datasheet", 2019,
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"),
    _S("nvidia_ampere_whitepaper", _NV, "NVIDIA A100 Tensor Core GPU Architecture", "NVIDIA whitepaper", 2020,
       "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"),
    _S("nvidia_a100_datasheet", _NV, "NVIDIA A100 Tensor Core GPU", "NVIDIA datasheet", 2021,
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
       "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"),
    _S("nvidia_hopper_whitepaper", _NV, "NVIDIA H100 Tensor Core GPU Architecture", "NVIDIA whitepaper", 2022,
       "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"),
    _S("nvidia_h100_datasheet", _NV, "NVIDIA H100 Tensor Core GPU", "NVIDIA datasheet", 2022,
       "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
       "Tensor figures are quoted with 2:4 sparsity, twice the dense rate."),
    _S("nvidia_nvswitch_blog", _NV, "Upgrading Multi-GPU Interconnectivity with the Third-Generation NVIDIA NVSwitch",
       "NVIDIA Technical Blog", 2022,
       "https://developer.nvidia.com/blog/upgrading-multi-gpu-interconnectivity-with-the-third-generation-nvidia-nvswitch/"),
    _S("nvidia_h200_page", _NV, "NVIDIA H200 Tensor Core GPU", "NVIDIA product page", "n.d.",
       "https://www.nvidia.com/en-us/data-center/h200/"),
    _S("nvidia_nvlink_page", _NV, "NVLink and NVLink Switch", "NVIDIA product page", "n.d.", _NVLINK),
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
       "https://docs.nvidia.com/cuda/cuda-c-programming-guide/"),
    _S("nvidia_nccl_user_guide", _NV, "NCCL User Guide", "NVIDIA documentation", "n.d.",
       "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/index.html",
       "Sections Collective Operations, Point-to-point communication and Environment Variables "
       "(`NCCL_ALGO`, `NCCL_PROTO`)."),
    _S("nvidia_nccl_tests_performance", _NV, "Performance reported by NCCL tests (nccl-tests, doc/PERFORMANCE.md)",
       "GitHub repository NVIDIA/nccl-tests", "n.d.",
       "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"),
    _S("nvidia_nccl_2283_release", _NV, "NCCL Release 2.28.3", "NCCL Release Notes, NVIDIA documentation", 2025,
       "https://docs.nvidia.com/deeplearning/nccl/release-notes/rel_2-28-3.html",
       "New host collective APIs: ncclAlltoAll, ncclScatter, ncclGather."),
    _S("jeaugey2019nccl24", "Jeaugey, S.", "Massively Scale Your Deep Learning Training with NCCL 2.4",
       "NVIDIA Technical Blog", 2019, "https://developer.nvidia.com/blog/massively-scale-deep-learning-training-nccl-2-4/"),
    _S("jeaugey2019nccl25", "Jeaugey, S.", "NCCL 2.5.6-1 (release pull request)",
       "GitHub, NVIDIA/nccl pull request #255", 2019, "https://github.com/NVIDIA/nccl/pull/255",
       "Release notes: \"Add model-based tuning to switch between the different algorithms and protocols.\""),
    _S("nvidia_nccl_tuning", _NV, "NCCL 2.20.3-1 source: the tuning model (src/graph/tuning.cc)",
       "GitHub repository NVIDIA/nccl", 2024, "https://github.com/NVIDIA/nccl/blob/v2.20.3-1/src/graph/tuning.cc",
       "\"Latencies in us\": per-step hardware latency (hwLat) of a ring over NVLink 0.6 (LL), 1.9 (LL128), "
       "3.4 (Simple) µs, over PCIe 1.0, 2.5, 5.7 µs; plus a base latency per collective (ring: 6.6, 14.0, 8.4 µs). "
       "Later releases (2.30) keep these figures."),
    # Other vendors and standards bodies
    _S("intel_optimization_manual", "Intel", "Intel 64 and IA-32 Architectures Optimization Reference Manual",
       "Intel documentation", "n.d.",
       "https://www.intel.com/content/www/us/en/developer/articles/technical/intel64-and-ia32-architectures-optimization.html"),
    _S("intel_atx3_psu_guide", "Intel",
       "ATX Version 3 Multi Rail Desktop Platform Power Supply Design Guide, rev. 2.1a",
       "Intel document 336521", 2023,
       "https://edc.intel.com/content/www/us/en/design/ipla/software-development-platforms/client/platforms/"
       "alder-lake-desktop/atx-version-3-0-multi-rail-desktop-platform-power-supply-design-guide/2.1a/"
       "dc-output-current-required/"),
    _S("clearesult_80plus", "CLEAResult", "80 PLUS Program Details", "80 PLUS certification program", "n.d.",
       "https://www.clearesult.com/80plus/program-details"),
    _S("pcisig_specifications", "PCI-SIG", "PCI Express Base Specifications", "PCI-SIG", "n.d.",
       "https://pcisig.com/specifications", "Transfer rate per lane and line encoding of each generation."),
    _S("google_bfloat16", "Google Cloud", "The bfloat16 numerical format", "Cloud TPU documentation", "n.d.",
       "https://cloud.google.com/tpu/docs/bfloat16"),
    # Library documentation
    _S("onednn_repo", "oneDNN Contributors", "oneDNN: oneAPI Deep Neural Network Library",
       "GitHub repository uxlfoundation/oneDNN", "n.d.", "https://github.com/uxlfoundation/oneDNN",
       "Performance library of deep-learning primitives; its README lists PyTorch among the applications using it."),
    _S("pytorch_ddp_docs_1_7", _PT, "torch.nn.parallel.DistributedDataParallel (PyTorch 1.7.0)",
       "PyTorch documentation", 2020,
       "https://pytorch.org/docs/1.7.0/generated/torch.nn.parallel.DistributedDataParallel.html",
       "Signature: bucket_cap_mb=25; later versions keep 25 MiB as the default."),
    _S("pytorch_amp_docs", _PT, "Automatic Mixed Precision package: torch.amp", "PyTorch documentation", "n.d.",
       "https://pytorch.org/docs/stable/amp.html"),
    _S("pytorch_cuda_semantics", _PT, "CUDA semantics: TensorFloat-32 (TF32) on Ampere (and later) devices",
       "PyTorch documentation", "n.d.", "https://pytorch.org/docs/stable/notes/cuda.html"),
    _S("pytorch_lrn_docs", _PT, "torch.nn.LocalResponseNorm", "PyTorch documentation", "n.d.",
       "https://pytorch.org/docs/stable/generated/torch.nn.LocalResponseNorm.html"),
    _S("pytorch_pipelining_docs", _PT, "Pipeline Parallelism: torch.distributed.pipelining", "PyTorch documentation",
       "n.d.", "https://pytorch.org/docs/stable/distributed.pipelining.html"),
    _S("pytorch_tensor_parallel_docs", _PT, "Tensor Parallelism: torch.distributed.tensor.parallel",
       "PyTorch documentation", "n.d.", "https://pytorch.org/docs/stable/distributed.tensor.parallel.html"),
    _S("pytorch_dcp_docs", _PT, "Distributed Checkpoint - torch.distributed.checkpoint", "PyTorch 2.13 documentation",
       2026, "https://docs.pytorch.org/docs/2.13/distributed.checkpoint.html", "Load-time resharding; async_save."),
    _S("pytorch_distributed_debug_docs", _PT, "Debugging torch.distributed applications",
       "PyTorch 2.13 documentation (torch.distributed)", 2026,
       "https://docs.pytorch.org/docs/2.13/distributed.html#debugging-torch-distributed-applications",
       "TORCH_DISTRIBUTED_DEBUG=DETAIL checks that every rank runs the same collective with the same shapes."),
    _S("torchvision_alexnet_docs", _PT, "torchvision.models.alexnet (AlexNet_Weights.IMAGENET1K_V1)",
       "torchvision documentation", "n.d.",
       "https://pytorch.org/vision/stable/models/generated/torchvision.models.alexnet.html",
       "Weights metadata: `num_params` 61,100,840; `_ops` 0.714 GFLOPS."),
)
SOURCES: dict[str, Source] = {s.key: s for s in _ENTRIES}


def _authors(source: Source) -> list[str]:
    return [a.strip() for a in source.authors.split(";")]


def _surname(author: str) -> str:
    return author.split(",")[0].strip()


def _name_part(source: Source) -> str:
    """'Huang et al.', 'Patarasuk and Yuan', 'NVIDIA': the author part of a citation."""
    authors = _authors(source)
    if len(authors) == 1:
        return _surname(authors[0])
    if len(authors) == 2:
        return f"{_surname(authors[0])} and {_surname(authors[1])}"
    return f"{_surname(authors[0])} et al."


def year_text(key: str) -> str:
    """The year as cited, with a/b/... where one author part has several sources in a year ('2017a', 'n.d.-b')."""
    source = SOURCES[key]
    same = sorted(k for k, s in SOURCES.items() if _name_part(s) == _name_part(source) and s.year == source.year)
    if len(same) == 1:
        return str(source.year)
    letter = "abcdefghijklmnopqrstuvwxyz"[same.index(key)]
    return f"{source.year}-{letter}" if source.year == "n.d." else f"{source.year}{letter}"


def cite_text(key: str) -> str:
    """The text of a citation: 'Huang et al., 2019'."""
    return f"{_name_part(SOURCES[key])}, {year_text(key)}"


def sources_text(keys) -> str:
    """The citation texts of several keys, for printing a data table's ``source``: 'NVIDIA, 2022a; NVIDIA, 2022b'."""
    return "; ".join(cite_text(k) for k in keys)


def cite(key: str) -> str:
    """A markdown citation linking to the References cell: '[Huang et al., 2019](#ref-huang2019gpipe)'."""
    return f"[{cite_text(key)}](#ref-{key})"


def _author_list(source: Source) -> str:
    authors = _authors(source)
    if len(authors) <= 2:
        return " and ".join(authors)
    return ", ".join(authors[:-1]) + ", and " + authors[-1]


def _entry(key: str) -> str:
    s = SOURCES[key]
    note = f" {s.note}" if s.note else ""
    return f'- <a id="ref-{key}"></a>{_author_list(s)} ({year_text(key)}). *{s.title}*. {s.venue}.{note} <{s.url}>'


def references_markdown(keys) -> str:
    """The markdown of a References cell for ``keys``: one anchored bullet per source, sorted by citation."""
    unique = sorted(set(keys), key=lambda k: (cite_text(k).lower(), k))
    return "\n".join(["## References", ""] + [_entry(k) for k in unique])


_LINK = re.compile(r"\]\(#ref-([A-Za-z0-9_]+)\)")


def cited_keys(markdown_text: str) -> list[str]:
    """The keys of every ``(#ref-KEY)`` link in ``markdown_text``, once each, in order of first appearance."""
    return list(dict.fromkeys(_LINK.findall(markdown_text)))
