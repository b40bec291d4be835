#!/bin/sh
# sat_coco.sh: Xu et al. 2015 ("Show, Attend and Tell") on MS COCO with Karpathy's splits
# (113,287 training images with restval, 5,000 validation, 5,000 test), soft (default) or
# hard (--hard) attention over frozen VGG-19 features; the stages, their resumption and the
# knobs are experiments/sat_pretrained.sh's.
#
#   COCO_JSON=dataset_coco.json COCO_IMAGES=DIR VGG19=vgg19.safetensors sh experiments/sat_coco.sh [--hard]
#
# dataset_coco.json is Karpathy's split file; DIR holds train2014/ and val2014/. The
# feature cache is 123,287 x 196 x 512 in F16: 24.7 GB, read through a memory map (it need
# not fit in memory).
# The recipe (as sat_flickr8k.sh, which says where each setting comes from) is
# arctic-captions' evaluate_coco.py, written for COCO: word embedding 512, LSTM 1800,
# attention 512, deep output, scalar gate, dropout 0.5, alpha_c = 1, Adam at 0.0002, batch
# 64, a vocabulary of the 10,000 most frequent words (approximated here by words seen at
# least MIN_COUNT = 5 times, Karpathy's threshold, about 9,500 words), early stopping on
# validation BLEU-4 (patience 10 validations), beam 5. The paper used Adam for COCO.
# Validation decodes VAL_COUNT = 1,000 of the 5,000 validation images each epoch, to keep
# it a small part of an epoch on a CPU.
# Paper's scores (Table 1, BLEU x100): soft 70.7 / 49.2 / 34.4 / 24.3, hard 71.8 / 50.4 /
# 35.7 / 25.0 (METEOR 23.90 and 23.04, not computed here).
set -eu
: "${COCO_JSON:?set COCO_JSON to Karpathy's dataset_coco.json}"
: "${COCO_IMAGES:?set COCO_IMAGES to the folder holding train2014/ and val2014/}"
NAME=sat_coco TITLE="MS COCO (Karpathy splits)" DATA="karpathy:$COCO_JSON:$COCO_IMAGES" \
MIN_COUNT=${MIN_COUNT:-5} VAL_COUNT=${VAL_COUNT:-1000} \
PAPER_SOFT="70.7 | 49.2 | 34.4 | 24.3" PAPER_HARD="71.8 | 50.4 | 35.7 | 25.0" \
    exec sh "$(dirname "$0")/sat_pretrained.sh" "$@"
