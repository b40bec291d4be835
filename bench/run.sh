#!/bin/sh
# run.sh BUILD: the toolkit's benchmarks, one after another, each under a heading.
# To add one, append a line:   run "what it measures" "$build"/bench/bench_NAME [args]
# (use `env VAR=value` in front of the program for a variant). Figures go to stdout.
build=${1:-build}
status=0

run() {
    title=$1
    shift
    echo "== $title"
    echo "\$ $*"
    "$@" || { echo "FAILED: $*"; status=1; }
    echo
}

# sgemm through the kernels chosen for this machine (core/gemm.h: measured once and cached),
# then every shape through each OpenBLAS copy (its own core type, HASWELL, SKYLAKEX) and the
# packed step kernels, side by side in one run.
run "gemm, the kernels chosen and each candidate" "$build"/bench/bench_gemm

# DRAW's read filterbank (vision/filterbank.h), forward and backward, its loops against
# its GEMMs on the toolkit's image sizes: CPU microseconds per image, one thread.
run "filterbank read, loops vs GEMM" "$build"/bench/bench_filterbank

# Caption tokenisation (seq/tokenizer.h, Stanford PTBTokenizer's rules), tokens per second,
# then one 1 MB caption and the worst 4,096-byte one (bench/bench_tokenizer.c).
run "caption tokenizer" "$build"/bench/bench_tokenizer

# BPE (seq/bpe.h): learning 8000 merges on the translation training split's Spanish side
# (built-in generated text without `make data`), then segmenting it, lines per second.
if [ -f data/bible/train.tsv ]; then
    run "BPE learning and segmenting" "$build"/bench/bench_bpe data/bible/train.tsv 8000 2
else
    run "BPE learning and segmenting" "$build"/bench/bench_bpe
fi

# Data parallelism over MPI: 1 rank x 2 threads against 2 ranks x 1 thread for both
# programs, then the cluster model (bytes allreduced per step, ring allreduce step time and
# efficiency on 10, 25, 100 Gbit/s from the measured compute time): bench/RESULTS.md.
run "training over MPI ranks, and the cluster model" sh bench/mpi_train.sh "$build"

# Training throughput, peak memory and beam-3 decoding of both models against the PyTorch
# references in bench/reference/ (same OPENBLAS_CORETYPE; PyTorch gets its best of intra-op
# threads 1, 2 x OpenBLAS threads 1, 2); prints the table bench/RESULTS.md records.
if /usr/bin/python3 -c "import torch, numpy" 2>/dev/null; then
    run "training and decoding vs PyTorch" /usr/bin/python3 bench/reference/bench_train.py --build "$build"
else
    echo "== training and decoding vs PyTorch: skipped, PyTorch is not installed"
    echo "   (as root: apt-get install -y python3-torch python3-numpy)"
fi

# The glimpse classifier (draw classify, models/glimpse.h) against its PyTorch version
# (bench/reference/glimpse_ref.py): training images per second on 1 and 2 threads.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    run "glimpse classifier training vs PyTorch" /usr/bin/python3 bench/reference/bench_glimpse.py --bin bin
else
    echo "== glimpse classifier training vs PyTorch: skipped, PyTorch is not installed"
    echo "   (as root: apt-get install -y python3-torch python3-numpy)"
fi

# The sentence classifier (text classify, models/textclass.h: the Keras attention demo's
# model) against its PyTorch version (bench/reference/textclass_ref.py): training sentences
# per second on 1 and 2 threads and the peak memory of both.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    run "sentence classifier training vs PyTorch" /usr/bin/python3 bench/reference/bench_text.py --bin bin
else
    echo "== sentence classifier training vs PyTorch: skipped, PyTorch is not installed"
    echo "   (as root: apt-get install -y python3-torch python3-numpy)"
fi

# The translator (text translate, models/translator.h) against its PyTorch version
# (bench/reference/translator_ref.py): training pairs, greedy- and beam-5-decoded sentences per
# second on 1 and 2 threads, and the peak memory of both (bench/bench_translate.c is the
# toolkit's side); first, how many sentences' beam-5 words the two sides agree on.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    run "translator training and decoding vs PyTorch" /usr/bin/python3 bench/reference/bench_translate.py --build "$build"
else
    echo "== translator training and decoding vs PyTorch: skipped, PyTorch is not installed"
    echo "   (as root: apt-get install -y python3-torch python3-numpy)"
fi

# Pretrained-encoder inference (VGG-19 to conv5_4, ResNet-101 to layer4, batch 16, 224 px)
# against PyTorch and ONNX Runtime (onnxruntime-node, which `make bench-deps` installs; the
# same networks exported with torch.onnx, graph optimisation level all) on the same threads:
# images per second, peak memory, FLOP rate.
if /usr/bin/python3 -c "import torch, torchvision, numpy" 2>/dev/null; then
    run "encoder inference vs PyTorch and ONNX Runtime" /usr/bin/python3 bench/reference/bench_encoders.py --build "$build"
else
    echo "== encoder inference vs PyTorch: skipped, PyTorch or torchvision is not installed"
    echo "   (as root: apt-get install -y python3-torch python3-torchvision python3-numpy)"
fi

# Training on cached features (Xu et al.'s decoder sizes, 14 x 14 x 512, batch 64) against
# PyTorch on the same threads, and VGG-19 feature extraction through `caption features`.
if /usr/bin/python3 -c "import torch, torchvision, numpy, PIL" 2>/dev/null; then
    run "decoder-only training on cached features vs PyTorch; VGG-19 extraction" \
        /usr/bin/python3 bench/reference/bench_sat_features.py --build "$build"
else
    echo "== cached-feature training vs PyTorch: skipped, PyTorch, torchvision or PIL is missing"
fi

# One Transformer layer's training step (seq/transformer.h, bench/bench_transformer.c)
# against PyTorch's nn.TransformerEncoderLayer / DecoderLayer, one thread, median of 3 rounds.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    run "Transformer layers vs PyTorch" /usr/bin/python3 bench/reference/bench_transformer.py --build "$build"
else
    echo "== Transformer layers vs PyTorch: skipped, PyTorch is not installed"
fi

# The Transformer translator's training step and beam-5 decoding (models/translator_transformer.h,
# bench/bench_translate_transformer.c) against the same model on PyTorch's nn.Transformer
# blocks (bench/reference/translator_transformer_ref.py), 1 and 2 threads, median of 3 rounds.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    run "Transformer translator vs PyTorch" /usr/bin/python3 bench/reference/bench_translate_transformer.py --build "$build"
else
    echo "== Transformer translator vs PyTorch: skipped, PyTorch is not installed"
fi

exit $status
