"""The papers, books and course texts the series cites.

Data only: ``d2lmp.bibliography`` gathers these with the other sources into ``SOURCES`` and cites them.
"""

from __future__ import annotations

from d2lmp.sources.record import Source

__all__ = ["PAPERS"]

_S = Source
PAPERS: tuple[Source, ...] = (
    # Papers
    _S("krizhevsky2012imagenet", "Krizhevsky, A.; Sutskever, I.; Hinton, G. E.",
       "ImageNet Classification with Deep Convolutional Neural Networks",
       "Advances in Neural Information Processing Systems 25 (NIPS 2012)", 2012,
       "https://papers.nips.cc/paper_files/paper/2012/hash/c399862d3b9d6b76c8436e924a68c45b-Abstract.html",
       "AlexNet: §3.2, the network split over two 3 GB GTX 580s; §3.5, the layer shapes; §5, five to six days of "
       "training; Table 2, the ILSVRC-2012 results; §6, the Fisher-vector entries it beat."),
    _S("krizhevsky2014weird", "Krizhevsky, A.", "One weird trick for parallelizing convolutional neural networks",
       "arXiv:1404.5997", 2014, "https://arxiv.org/abs/1404.5997",
       "The \"one weird trick\": data parallelism for the convolutional layers, which hold most of the computation, "
       "and model parallelism for the fully connected layers, which hold most of the parameters."),
    _S("buck2004brook", "Buck, I.; Foley, T.; Horn, D.; Sugerman, J.; Fatahalian, K.; Houston, M.; Hanrahan, P.",
       "Brook for GPUs: Stream Computing on Graphics Hardware", "ACM Transactions on Graphics 23(3) (SIGGRAPH 2004)",
       2004, "https://doi.org/10.1145/1015706.1015800",
       "Brook: C extended with data-parallel streams and kernels, compiled to the GPU's shaders; abstract: SAXPY, "
       "SGEMV, segmentation, FFT and ray tracing up to seven times faster than on the CPU."),
    _S("lindholm2008tesla", "Lindholm, E.; Nickolls, J.; Oberman, S.; Montrym, J.",
       "NVIDIA Tesla: A Unified Graphics and Computing Architecture", "IEEE Micro 28(2)", 2008,
       "https://doi.org/10.1109/MM.2008.31",
       "NVIDIA's Tesla architecture (G80): one unified array of streaming processors runs both graphics shaders and "
       "CUDA C programs."),
    _S("nickolls2008cuda", "Nickolls, J.; Buck, I.; Garland, M.; Skadron, K.",
       "Scalable Parallel Programming with CUDA", "ACM Queue 6(2)", 2008, "https://doi.org/10.1145/1365490.1365500",
       "CUDA's programming model: kernels written in C run by a grid of thread blocks, the threads of a block "
       "sharing memory and barriers."),
    _S("raina2009gpu", "Raina, R.; Madhavan, A.; Ng, A. Y.",
       "Large-scale Deep Unsupervised Learning using Graphics Processors",
       "Proceedings of the 26th International Conference on Machine Learning (ICML 2009)", 2009,
       "https://doi.org/10.1145/1553374.1553486",
       "Deep belief networks with up to 100 million parameters trained on a GPU, weeks of CPU time cut to about a "
       "day."),
    _S("ciresan2010deep", "Cireşan, D. C.; Meier, U.; Gambardella, L. M.; Schmidhuber, J.",
       "Deep, Big, Simple Neural Nets Excel on Handwritten Digit Recognition",
       "Neural Computation 22(12); arXiv:1003.0358", 2010, "https://arxiv.org/abs/1003.0358",
       "Abstract: 0.35 % error on MNIST with plain multilayer perceptrons trained on deformed digits on graphics "
       "cards."),
    _S("dalal2005hog", "Dalal, N.; Triggs, B.", "Histograms of Oriented Gradients for Human Detection",
       "IEEE Conference on Computer Vision and Pattern Recognition (CVPR 2005)", 2005,
       "https://doi.org/10.1109/CVPR.2005.177",
       "HOG: histograms of gradient orientations in small cells, normalised over blocks, as the features of a "
       "detector."),
    _S("lecun1998gradient", "LeCun, Y.; Bottou, L.; Bengio, Y.; Haffner, P.",
       "Gradient-Based Learning Applied to Document Recognition", "Proceedings of the IEEE 86(11)", 1998,
       "https://doi.org/10.1109/5.726791",
       "LeNet-5: 32×32 digit images through convolutions, subsampling layers and fully connected layers, trained by "
       "gradient descent."),
    _S("williams2009roofline", "Williams, S.; Waterman, A.; Patterson, D.",
       "Roofline: An Insightful Visual Performance Model for Multicore Architectures",
       "Communications of the ACM 52(4)", 2009, "https://doi.org/10.1145/1498765.1498785",
       "The roofline: attainable FLOP/s = min(peak FLOP/s, operational intensity × memory bandwidth), and the ridge "
       "point where the two meet."),
    _S("mccalpin1995bandwidth", "McCalpin, J. D.",
       "Memory Bandwidth and Machine Balance in Current High Performance Computers",
       "IEEE Computer Society Technical Committee on Computer Architecture (TCCA) Newsletter, December 1995", 1995,
       "https://www.cs.virginia.edu/~mccalpin/papers/bandwidth/bandwidth.html",
       "The STREAM benchmark. Section Philosophy and Justification: STREAM credits only the reads and writes a "
       "kernel names; on machines with a write-allocate cache policy each write also reads the line it writes into, "
       "traffic that is not counted."),
    _S("amdahl1967validity", "Amdahl, G. M.",
       "Validity of the single processor approach to achieving large scale computing capabilities",
       "AFIPS Spring Joint Computer Conference", 1967, "https://doi.org/10.1145/1465482.1465560",
       "The argument, made in words, that the sequential part of a job bounds the speed-up of running the rest in "
       "parallel (Amdahl's law)."),
    _S("chandrakasan1992lowpower", "Chandrakasan, A. P.; Sheng, S.; Brodersen, R. W.", "Low-Power CMOS Digital Design",
       "IEEE Journal of Solid-State Circuits 27(4)", 1992, "https://doi.org/10.1109/4.126534",
       "The switching power of CMOS logic: a capacitance C charged α·f times a second to the supply voltage V "
       "dissipates about α·C·V²·f."),
    _S("greaves2011soc", "Greaves, D. J.", "System-on-Chip Design and Modelling (lecture notes)",
       "University of Cambridge Computer Laboratory", "2010–11",
       "https://www.cl.cam.ac.uk/teaching/1011/SysOnChip/socdam-notes1011.pdf",
       "Dynamic power P ∝ C·V²·f; with the voltage scaled in proportion to the clock, \"power will then have cubic "
       "dependence on f\"."),
    _S("micikevicius2018mixed", "Micikevicius, P.; Narang, S.; Alben, J.; Diamos, G.; Elsen, E.; Garcia, D.; "
       "Ginsburg, B.; Houston, M.; Kuchaiev, O.; Venkatesh, G.; Wu, H.", "Mixed Precision Training",
       "International Conference on Learning Representations (ICLR 2018); arXiv:1710.03740", 2018,
       "https://arxiv.org/abs/1710.03740",
       "FP16 training with an FP32 master copy of the weights and loss scaling, and the activation-gradient "
       "histogram of an SSD detector that shows why the scale is needed."),
    _S("kingma2015adam", "Kingma, D. P.; Ba, J.", "Adam: A Method for Stochastic Optimization",
       "International Conference on Learning Representations (ICLR 2015); arXiv:1412.6980", 2015,
       "https://arxiv.org/abs/1412.6980", "Algorithm 1: a first moment m and a second moment v per parameter."),
    _S("sutskever2013momentum", "Sutskever, I.; Martens, J.; Dahl, G.; Hinton, G.",
       "On the importance of initialization and momentum in deep learning",
       "Proceedings of the 30th International Conference on Machine Learning (ICML 2013), PMLR 28(3)", 2013,
       "https://proceedings.mlr.press/v28/sutskever13.html",
       "Classical momentum keeps one velocity v per parameter; plain SGD keeps none."),
    _S("ieee754_2019", "IEEE", "IEEE Standard for Floating-Point Arithmetic (IEEE Std 754-2019)", "IEEE", 2019,
       "https://doi.org/10.1109/IEEESTD.2019.8766229",
       "The binary32 and binary16 formats, and the default rounding: round to nearest, ties to even."),
    _S("jia2014caffe", "Jia, Y.; Shelhamer, E.; Donahue, J.; Karayev, S.; Long, J.; Girshick, R.; Guadarrama, S.; "
       "Darrell, T.", "Caffe: Convolutional Architecture for Fast Feature Embedding",
       "ACM Multimedia 2014; arXiv:1408.5093", 2014, "https://arxiv.org/abs/1408.5093",
       "Caffe, the framework the series names for im2col: convolution computed as one matrix product over unrolled "
       "input patches."),
    _S("chetlur2014cudnn", "Chetlur, S.; Woolley, C.; Vandermersch, P.; Cohen, J.; Tran, J.; Catanzaro, B.; "
       "Shelhamer, E.", "cuDNN: Efficient Primitives for Deep Learning", "arXiv:1410.0759", 2014,
       "https://arxiv.org/abs/1410.0759",
       "cuDNN, NVIDIA's library of deep-learning primitives; §3.1: convolution lowered to a matrix product whose "
       "tiles are built in on-chip memory, never the whole matrix."),
    _S("lavin2016winograd", "Lavin, A.; Gray, S.", "Fast Algorithms for Convolutional Neural Networks",
       "IEEE Conference on Computer Vision and Pattern Recognition (CVPR 2016); arXiv:1509.09308", 2016,
       "https://arxiv.org/abs/1509.09308",
       "Winograd's minimal filtering algorithms for small convolutions: fewer multiplications than the direct "
       "method, more additions and transforms."),
    _S("mathieu2014fft", "Mathieu, M.; Henaff, M.; LeCun, Y.", "Fast Training of Convolutional Networks through FFTs",
       "International Conference on Learning Representations (ICLR 2014); arXiv:1312.5851", 2014,
       "https://arxiv.org/abs/1312.5851",
       "Convolutions computed as products in the Fourier domain: fewer multiplications, at the cost of the "
       "transforms."),
    _S("huang2019gpipe", "Huang, Y.; Cheng, Y.; Bapna, A.; Firat, O.; Chen, M. X.; Chen, D.; Lee, H.; Ngiam, J.; "
       "Le, Q. V.; Wu, Y.; Chen, Z.", "GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism",
       "Advances in Neural Information Processing Systems 32 (NeurIPS 2019); arXiv:1811.06965", 2019,
       "https://arxiv.org/abs/1811.06965",
       "GPipe: consecutive layers as stages, micro-batches pipelined through them, gradients summed over the step, "
       "activations recomputed in backward; §2.3: the bubble, O((K−1)/(M+K−1)) for K stages and M micro-batches."),
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
    _S("shah2024flashattention3", "Shah, J.; Bikshandi, G.; Zhang, Y.; Thakkar, V.; Ramani, P.; Dao, T.",
       "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", "arXiv:2407.08608", 2024,
       "https://arxiv.org/abs/2407.08608",
       "Abstract: FlashAttention-2 reaches only 35 % utilization on the H100; FlashAttention-3 up to 740 TFLOP/s "
       "(75 %) in FP16 and close to 1.2 PFLOP/s in FP8."),
    _S("dubey2024llama3", "Dubey, A.; Jauhri, A.; Pandey, A.; Kadian, A.; Al-Dahle, A.; Letman, A.; Mathur, A.",
       "The Llama 3 Herd of Models", "arXiv:2407.21783", 2024, "https://arxiv.org/abs/2407.21783",
       "Llama Team, AI @ Meta. Table 3: the 8B, 70B and 405B shapes; §3.3.2: context parallelism, rank i holding "
       "chunks i and 2·CP−1−i of 2·CP; Table 4 (§3.3.2, p. 10): the 405B run's TP, CP, PP, DP, batch, TFLOPs per "
       "GPU and BF16 MFU on 8,192 and 16,384 H100s; §3.3.4: job interruptions during pre-training."),
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
       "https://github.com/karpathy/nanoGPT",
       "A small GPT in plain PyTorch (`model.py`), the plan the series' GPT follows."),
    _S("shoeybi2019megatron", "Shoeybi, M.; Patwary, M.; Puri, R.; LeGresley, P.; Casper, J.; Catanzaro, B.",
       "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism", "arXiv:1909.08053",
       2019, "https://arxiv.org/abs/1909.08053",
       "Megatron-LM's tensor parallelism (§3): a column-parallel then a row-parallel linear layer, the f and g "
       "operators, attention split by heads; model- and data-parallel groups of GPUs."),
    _S("li2020pytorchddp", "Li, S.; Zhao, Y.; Varma, R.; Salpekar, O.; Noordhuis, P.; Li, T.; Paszke, A.; Smith, J.; "
       "Vaughan, B.; Damania, P.; Chintala, S.",
       "PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
       "Proceedings of the VLDB Endowment 13(12)", 2020, "https://doi.org/10.14778/3415478.3415530",
       "PyTorch's DistributedDataParallel: gradients all-reduced in buckets that overlap with backward, no_sync to "
       "skip that during accumulation, and process groups over NCCL, gloo and MPI."),
    _S("rajbhandari2020zero", "Rajbhandari, S.; Rasley, J.; Ruwase, O.; He, Y.",
       "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
       "International Conference for High Performance Computing, Networking, Storage and Analysis (SC20); "
       "arXiv:1910.02054", 2020, "https://arxiv.org/abs/1910.02054",
       "ZeRO: 16 bytes per parameter for mixed-precision Adam; stages 1-3 shard optimizer state, gradients and "
       "parameters over the data-parallel ranks (§5); Figure 1: 120, 31.4, 16.6 and 1.9 GB."),
    _S("zhao2023fsdp", "Zhao, Y.; Gu, A.; Varma, R.; Luo, L.; Huang, C.-C.; Xu, M.; Wright, L.; Shojanazeri, H.; "
       "Ott, M.; Shleifer, S.; Desmaison, A.; Balioglu, C.; Damania, P.; Nguyen, B.; Chauhan, G.; Hao, Y.; "
       "Mathews, A.; Li, S.",
       "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
       "Proceedings of the VLDB Endowment 16(12); arXiv:2304.11277", 2023, "https://arxiv.org/abs/2304.11277",
       "PyTorch FSDP: ZeRO-3-style sharding by units of layers, each unit all-gathered before use and freed after, "
       "with backward prefetching to overlap communication."),
    _S("wang2023overlap", "Wang, S.; Wei, J.; Sabne, A.; Davis, A.; Ilbeyi, B.; Hechtman, B.; Chen, D.; Murthy, K. S.; "
       "Maggioni, M.; Zhang, Q.; Kumar, S.; Guo, T.; Xu, Y.; Zhou, Z.",
       "Overlap Communication with Dependent Computation via Decomposition in Large Deep Learning Models",
       "Proceedings of the 28th ACM International Conference on Architectural Support for Programming Languages and "
       "Operating Systems, Volume 1 (ASPLOS 2023), pp. 93-106", 2023, "https://doi.org/10.1145/3567955.3567959",
       "Abstract: the communication that intra-layer model parallelism adds can be a large part of the step; "
       "decomposing a collective and the computation that depends on it into finer operations lets them overlap."),
    _S("zhang2022opt", "Zhang, S.; Roller, S.; Goyal, N.; Artetxe, M.; Chen, M.; Chen, S.; Dewan, C.; Diab, M.; "
       "Li, X.; Lin, X. V.; Mihaylov, T.; Ott, M.; Shleifer, S.; Shuster, K.; Simig, D.; Koura, P. S.; Sridhar, A.; "
       "Wang, T.; Zettlemoyer, L.", "OPT: Open Pre-trained Transformer Language Models", "arXiv:2205.01068", 2022,
       "https://arxiv.org/abs/2205.01068",
       "Table 1: the OPT shapes (175B: 96 layers, 96 heads, d_model 12,288, batch 2M tokens); §2.4: OPT-175B on 992 "
       "80GB A100s with FSDP and Megatron-LM tensor parallelism, up to 147 TFLOP/s per GPU."),
    _S("jiang2024megascale", "Jiang, Z.; Lin, H.; Zhong, Y.; Huang, Q.; Chen, Y.; Zhang, Z.; Peng, Y.; Li, X.; "
       "Xie, C.; Nong, S.; Jia, Y.; He, S.; Chen, H.; Bai, Z.; Hou, Q.; Yan, S.; Zhou, D.; Sheng, Y.; Jiang, Z.; "
       "Xu, H.; Wei, H.; Zhang, Z.; Nie, P.; Zou, L.; Zhao, S.; Xiang, L.; Liu, Z.; Li, Z.; Jia, X.; Ye, J.; "
       "Jin, X.; Liu, X.",
       "MegaScale: Scaling Large Language Model Training to More Than 10,000 GPUs",
       "21st USENIX Symposium on Networked Systems Design and Implementation (NSDI 24); arXiv:2402.15627", 2024,
       "https://arxiv.org/abs/2402.15627",
       "Table 1: the 175B and 530B configurations (TP 8, PP 8 and 35); Table 2: MFU of 175B on 256-12,288 Ampere GPUs, "
       "Megatron-LM against MegaScale (55.2 % on 12,288); Figure 9: 530B on 2,240-11,200; Table 3: the ablation."),
    _S("chen2016sublinear", "Chen, T.; Xu, B.; Zhang, C.; Guestrin, C.",
       "Training Deep Nets with Sublinear Memory Cost", "arXiv:1604.06174", 2016, "https://arxiv.org/abs/1604.06174",
       "Gradient checkpointing: keep only the inputs of a few segments in forward and recompute the rest in "
       "backward, O(√n) memory for n layers at the cost of one more forward."),
    _S("patarasuk2009bandwidth", "Patarasuk, P.; Yuan, X.",
       "Bandwidth optimal all-reduce algorithms for clusters of workstations",
       "Journal of Parallel and Distributed Computing 69(2)", 2009, "https://doi.org/10.1016/j.jpdc.2008.09.002",
       "Abstract: a tight lower bound on the data an all-reduce must communicate (2(n−1)/n of the buffer per "
       "process) and a ring-based algorithm, needing only tree connectivity, that attains it."),
    _S("thakur2005collective", "Thakur, R.; Rabenseifner, R.; Gropp, W.",
       "Optimization of Collective Communication Operations in MPICH",
       "International Journal of High Performance Computing Applications 19(1)", 2005,
       "https://doi.org/10.1177/1094342005051521",
       "The collective algorithms of MPICH and their cost in the model α + nβ (a latency plus a time per byte, + nγ "
       "for reductions)."),
    # Beyond this series: serving, low precision, experts, offloading, production systems
    _S("kwon2023vllm", "Kwon, W.; Li, Z.; Zhuang, S.; Sheng, Y.; Zheng, L.; Yu, C. H.; Gonzalez, J. E.; Zhang, H.; "
       "Stoica, I.", "Efficient Memory Management for Large Language Model Serving with PagedAttention",
       "Proceedings of the 29th Symposium on Operating Systems Principles (SOSP 2023); arXiv:2309.06180", 2023,
       "https://arxiv.org/abs/2309.06180", "vLLM: the key/value cache in pages, continuous batching."),
    _S("micikevicius2022fp8", "Micikevicius, P.; Stosic, D.; Burgess, N.; Cornea, M.; Dubey, P.; Grisenthwaite, R.; "
       "Ha, S.; Heinecke, A.; Judd, P.; Kamalu, J.; Mellempudi, N.; Oberman, S.; Shoeybi, M.; Siu, M.; Wu, H.",
       "FP8 Formats for Deep Learning", "arXiv:2209.05433", 2022, "https://arxiv.org/abs/2209.05433",
       "The E4M3 and E5M2 formats and training with them."),
    _S("deepseek2024v3", "DeepSeek-AI", "DeepSeek-V3 Technical Report", "arXiv:2412.19437", 2024,
       "https://arxiv.org/abs/2412.19437",
       "A mixture-of-experts model pre-trained with FP8 mixed precision; expert parallelism and its all-to-all. §1 and "
       "Table 1: 180K H800 GPU hours per trillion tokens (2,664K for 14.8T); §3.1-3.2: 2,048 H800s, PP 16, EP 64, "
       "ZeRO-1 DP; §4.2: 4K-token sequences, batch 3,072 rising to 15,360."),
    _S("liu2025moefolding", "Liu, D.; Yan, Z.; Yao, X.; Liu, T.; Korthikanti, V.; Wu, E.; Fan, S.; Deng, G.; Bai, H.; "
       "Chang, J.; Aithal, A.; Andersch, M.; Shoeybi, M.; Yao, J.; Zhou, C.; Wu, D.; Li, X.; Yang, J.",
       "MoE Parallel Folding: Heterogeneous Parallelism Mappings for Efficient Large-Scale MoE Model Training with "
       "Megatron Core", "arXiv:2504.14960", 2025, "https://arxiv.org/abs/2504.14960",
       "MoE parallel folding (abstract): the attention layers and the MoE layers of one model take their own "
       "parallel layouts over the same GPUs, so expert parallelism may span the tensor-parallel ranks."),
    _S("lepikhin2021gshard", "Lepikhin, D.; Lee, H.; Xu, Y.; Chen, D.; Firat, O.; Huang, Y.; Krikun, M.; Shazeer, N.; "
       "Chen, Z.", "GShard: Scaling Giant Models with Conditional Computation and Automatic Sharding",
       "International Conference on Learning Representations (ICLR 2021); arXiv:2006.16668", 2021,
       "https://arxiv.org/abs/2006.16668",
       "GShard: top-2 gating with weights renormalised to sum to 1, an expert capacity, and experts sharded over "
       "devices with all-to-all dispatch."),
    _S("jiang2024mixtral", "Jiang, A. Q.; Sablayrolles, A.; Roux, A.; Mensch, A.; Savary, B.; Bamford, C.; "
       "Chaplot, D. S.; de las Casas, D.; Bou Hanna, E.; Bressand, F.; Lengyel, G.; Bour, G.; Lample, G.; "
       "Lavaud, L. R.; Saulnier, L.; Lachaux, M.-A.; Stock, P.; Subramanian, S.; Yang, S.; Antoniak, S.; "
       "Le Scao, T.; Gervet, T.; Lavril, T.; Wang, T.; Lacroix, T.; El Sayed, W.",
       "Mixtral of Experts", "arXiv:2401.04088", 2024, "https://arxiv.org/abs/2401.04088",
       "Mixtral 8x7B, a sparse mixture of experts: abstract, 47B parameters of which 13B are active a token; "
       "Table 1: dim 4,096, 32 layers, head_dim 128, hidden_dim 14,336, 32 heads, 8 key/value heads, context 32,768, "
       "vocabulary 32,000, 8 experts, top 2."),
    _S("fedus2022switch", "Fedus, W.; Zoph, B.; Shazeer, N.",
       "Switch Transformers: Scaling to Trillion Parameter Models with Simple and Efficient Sparsity",
       "Journal of Machine Learning Research 23(120); arXiv:2101.03961", 2022, "https://arxiv.org/abs/2101.03961",
       "Switch Transformer: top-1 routing, each token to its one most likely expert, its output scaled by the "
       "router probability, with an expert capacity."),
    _S("rajbhandari2021zeroinfinity", "Rajbhandari, S.; Ruwase, O.; Rasley, J.; Smith, S.; He, Y.",
       "ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme Scale Deep Learning",
       "International Conference for High Performance Computing, Networking, Storage and Analysis (SC21); "
       "arXiv:2104.07857", 2021, "https://arxiv.org/abs/2104.07857",
       "ZeRO-Infinity: the training state offloaded to CPU memory and NVMe, for models larger than all the GPUs' "
       "memory."),
    _S("liang2024torchtitan", "Liang, W.; Liu, T.; Wright, L.; Constable, W.; Gu, A.; Huang, C.-C.; Zhang, I.; "
       "Feng, W.; Huang, H.; Wang, J.; Purandare, S.; Nadathur, G.; Idreos, S.",
       "TorchTitan: One-stop PyTorch native solution for production ready LLM pre-training", "arXiv:2410.06511",
       2024, "https://arxiv.org/abs/2410.06511",
       "How PyTorch composes FSDP2, tensor, pipeline and context parallelism in one system for LLM pre-training."),
    _S("austin2025scaling", "Austin, J.; Douglas, S.; Frostig, R.; Levskaya, A.; Chen, C.; Vikram, S.; Lebron, F.; "
       "Choy, P.; Ramasesh, V.; Webson, A.; Pope, R.",
       "How to Scale Your Model: A Systems View of LLMs on TPUs", "Google DeepMind", 2025,
       "https://jax-ml.github.io/scaling-book/",
       "Chapter \"How to Think About GPUs\" (gpus.md), section Rooflines for LLM Scaling on GPUs: data parallelism "
       "and ZeRO sharding are compute-bound when the tokens a GPU works on exceed C/W, W the node's egress (about "
       "2,500 tokens per GPU on an H100 node); tensor parallelism over Y GPUs becomes communication-bound when "
       "Y > F·W/C (F the MLP width); its TLDR: tensor parallelism compute-bound up to about 8 ways, one NVLink "
       "domain."),
    _S("tazi2025ultrascale", "Tazi, N.; Mom, F.; Zhao, H.; Nguyen, P.; Mekkouri, M.; Werra, L.; Wolf, T.",
       "The Ultra-Scale Playbook: Training LLMs on GPU Clusters", "Hugging Face", 2025,
       "https://huggingface.co/spaces/nanotron/ultrascale-playbook",
       "A practical guide to data, tensor, pipeline, context and expert parallelism and ZeRO, with measurements on "
       "real clusters. Section Benchmarking thousands of configurations and its figure "
       "`assets/data/benchmarks/benchmarks_interactive.html`: 1B-80B models on 1-64 nodes of eight H100s, sequence "
       "4,096, batch of 1M tokens; per layout DP, TP, PP, ZeRO, MBS, gradient accumulation, MFU, tokens/s per GPU "
       "and GPU memory. Figure `assets/data/benchmarks/pp_comm_bandwidth.html` (section Pipeline Parallelism): the "
       "same cluster's all-reduce, all-gather and reduce-scatter bus bandwidth (256 MB) on 1-64 nodes, median and "
       "5th-95th percentiles."),
    _S("mccandlish2018empirical", "McCandlish, S.; Kaplan, J.; Amodei, D.; OpenAI Dota Team",
       "An Empirical Model of Large-Batch Training", "arXiv:1812.06162", 2018, "https://arxiv.org/abs/1812.06162",
       "§2.2: the gradient noise scale B_noise, below which a larger batch cuts the steps almost in proportion and "
       "above which it barely helps; §2.3: the trade-off between optimizer steps S and examples E, "
       "(S/S_min − 1)(E/E_min − 1) = 1, and the critical batch size B_crit = E_min/S_min ≈ B_noise."),
    _S("austin2025scaling_gpus", "Austin, J.; Patil, S.; Paszke, A.; Pope, R.",
       "How to Scale Your Model, Part 12: How to Think About GPUs", "Google DeepMind; GitHub repository "
       "jax-ml/scaling-book (gpus.md)", 2025, "https://jax-ml.github.io/scaling-book/gpus/",
       "Section Rooflines for LLM Scaling on GPUs, Data Parallelism: compute-bound when the tokens per GPU B/X exceed "
       "C/W_collective, W the GPU egress within a node and the node egress across nodes (a DGX H100: 450 and 400 "
       "GB/s), about 2,475 tokens per GPU on an H100 at peak rates, counting the backward's FLOPs and assuming "
       "perfect overlap; section How Do Collectives Work on GPUs? (cross-node collectives): beyond the node an "
       "all-gather or reduce-scatter of B bytes costs about B / W_node egress; for a mixture of E experts, k a "
       "token, B/X > (E/k)·C/W (\"MoE models\")."),
    # Books and course texts
    _S("zhang2023d2l_alexnet", "Zhang, A.; Lipton, Z. C.; Li, M.; Smola, A. J.",
       "Dive into Deep Learning: Deep Convolutional Neural Networks (AlexNet)", "Cambridge University Press", 2023,
       "https://d2l.ai/chapter_convolutional-modern/alexnet.html",
       "D2L's AlexNet section: its code (layer shapes for 224×224 inputs), LeNet beside AlexNet, and its claim that "
       "power grows quadratically with clock."),
    _S("zhang2023d2l_hardware", "Zhang, A.; Lipton, Z. C.; Li, M.; Smola, A. J.", "Dive into Deep Learning: Hardware",
       "Cambridge University Press", 2023, "https://d2l.ai/chapter_computational-performance/hardware.html",
       "D2L's hardware section: memory bandwidths (HBM on data-centre parts, GDDR6 \"over 500 GB/s\") and PCIe "
       "transfer rates."),
    _S("shazeer2017outrageously", "Shazeer, N.; Mirhoseini, A.; Maziarz, K.; Davis, A.; Le, Q.; Hinton, G.; Dean, J.",
       "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer",
       "International Conference on Learning Representations (ICLR 2017); arXiv:1701.06538", 2017,
       "https://arxiv.org/abs/1701.06538", "A trainable router choosing among experts, top-k gating."),
    _S("goyal2017accurate", "Goyal, P.; Dollár, P.; Girshick, R.; Noordhuis, P.; Wesolowski, L.; Kyrola, A.; "
       "Tulloch, A.; Jia, Y.; He, K.", "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour",
       "arXiv:1706.02677", 2017, "https://arxiv.org/abs/1706.02677",
       "The linear scaling rule (§2.1) and gradual warm-up from η to kη over the first epochs (§2.2)."),
    _S("ioffe2015batch", "Ioffe, S.; Szegedy, C.",
       "Batch Normalization: Accelerating Deep Network Training by Reducing Internal Covariate Shift",
       "Proceedings of the 32nd International Conference on Machine Learning (ICML 2015); arXiv:1502.03167", 2015,
       "https://arxiv.org/abs/1502.03167", "Algorithm 1: normalise with the mini-batch's mean and variance."),
    _S("young1974first", "Young, J. W.", "A first order approximation to the optimum checkpoint interval",
       "Communications of the ACM 17(9)", 1974, "https://doi.org/10.1145/361147.361115", "Poisson failures: √(2δM)."),
    _S("daly2006higher", "Daly, J. T.", "A higher order estimate of the optimum checkpoint interval for restart dumps",
       "Future Generation Computer Systems 22(3)", 2006, "https://doi.org/10.1016/j.future.2004.11.016",
       "Figs. 3-5: τ_opt = 117, 57, 9.1 min for M = 24 h, 6 h, 15 min (δ = 5 min, R = 10 min)."),
    _S("kokolis2025reliability", "Kokolis, A.; Kuchnik, M.; Hoffman, J.; Kumar, A.; Malani, P.; Ma, F.; DeVito, Z.; "
       "Sengupta, S.; Saladi, K.; Wu, C.-J.", "Revisiting Reliability in Large-Scale Machine Learning "
       "Research Clusters", "IEEE HPCA 2025; arXiv:2410.21680", 2025, "https://arxiv.org/abs/2410.21680",
       "11 months, 4 million jobs, over 150 million A100 GPU-hours; MTTF falls as a job's GPUs grow."),
)
