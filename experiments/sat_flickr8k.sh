#!/bin/sh
# sat_flickr8k.sh: Xu et al. 2015 ("Show, Attend and Tell") on Flickr8k with soft (default)
# or hard (--hard) attention over frozen VGG-19 features; the stages, their resumption and
# the knobs are experiments/sat_pretrained.sh's.
#
#   FLICKR8K=DIR VGG19=vgg19.safetensors sh experiments/sat_flickr8k.sh [--hard]
#
# DIR holds Flickr8k.token.txt, Flickr_8k.{train,dev,test}Images.txt (6,000 / 1,000 / 1,000
# images) and Flicker8k_Dataset/; the weights are torchvision's VGG-19 (README: weights).
# The recipe and where each setting comes from:
#   encoder   VGG-19 pretrained on ImageNet, not fine-tuned; the 14 x 14 x 512 conv5_4 map
#             before the last max pool at 224 x 224 (the paper, sections 3.1.1 and 5.1)
#   decoder   word embedding 512, LSTM 1800, attention (ctx) 512, the previous word and
#             the context fed to the output layer (deep output), a scalar gate beta
#             ("selector"), dropout 0.5, doubly stochastic weight alpha_c = 1: the
#             defaults of arctic-captions' evaluate_coco.py, the authors' only published
#             training script (it says the data set "can be modified to
#             coco/flickr30k/flickr8k"); the attention is queried by the state before the
#             step's word (--query previous), as in the paper
#   optimiser Adam with arctic-captions' optimizers.py settings: learning rate 0.0002,
#             beta1 0.9, beta2 0.999 (its b1 = 0.1 and b2 = 0.001 are 1 - beta); batch 64.
#             The paper used RMSProp for Flickr8k; this toolkit has only Adam. Gradient
#             clipping at global norm 5 is this toolkit's default, not the paper's.
#   vocabulary every training word (Flickr8k has fewer than arctic-captions' 10,000)
#   hard      --attention hard: REINFORCE with a moving-average baseline and entropy
#             weight 0.002 (capgen.py's alpha_entropy_c); capgen.py also samples only half
#             the time (semi_sampling_p 0.5), which this toolkit does not
#   stopping  early stopping on validation BLEU-4 (the paper, section 5.2) with
#             arctic-captions' patience of 10 validations, validating once per epoch
#             (one caption per image per epoch; arctic-captions' epochs go over every
#             caption, five per image, and validated every 2,000 updates)
#   decoding  beam search of width 5 without length normalisation (generate_caps.py's
#             defaults, k = 5, normalize off)
# Paper's scores (Table 1, BLEU x100): soft 67 / 44.8 / 29.9 / 19.5, hard 67 / 45.7 /
# 31.4 / 21.3 (METEOR 18.93 and 20.30, not computed here).
# Differences that remain: Adam for RMSProp, this toolkit's stb_image JPEG decoder and
# resize for Caffe's, torchvision's VGG-19 weights for the Oxford release.
set -eu
: "${FLICKR8K:?set FLICKR8K to the Flickr8k folder (Flickr8k.token.txt, Flickr_8k.*Images.txt, Flicker8k_Dataset/)}"
NAME=sat_flickr8k TITLE=Flickr8k DATA="flickr8k:$FLICKR8K" MIN_COUNT=${MIN_COUNT:-1} \
PAPER_SOFT="67 | 44.8 | 29.9 | 19.5" PAPER_HARD="67 | 45.7 | 31.4 | 21.3" \
    exec sh "$(dirname "$0")/sat_pretrained.sh" "$@"
