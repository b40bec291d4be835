"""pth_to_safetensors.py IN.pth OUT.safetensors [--dtype f32|f16|bf16] [--no-classifier]

Turns a PyTorch state_dict saved with torch.save (torchvision's ImageNet weights such as
vgg19-dcbb9e9d.pth or resnet101-63fe2227.pth, or a model of your own) into the safetensors
file vision/encoder.h loads, without the safetensors package (bench/reference/
safetensors_io.py writes the format). Names are kept as they are (torchvision's
state_dict names are what the encoders read); a "module." prefix left by DataParallel is
removed, and a checkpoint that wraps the weights under "state_dict" or "model" is unwrapped.
Floating tensors are written as --dtype (default f32, which keeps every value; f16 and bf16
halve the file); integer tensors (batch norm's num_batches_tracked) as I64.
--no-classifier drops the classifier (fc.*, classifier.*), which the encoders read past.

Run with Debian's /usr/bin/python3 (python3-torch); torch.load uses weights_only=True, so a
pickle that holds anything but tensors is refused.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

CLASSIFIER = ("fc.", "classifier.", "head.", "pre_logits.")


def state_dict_of(obj, path):
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            obj = obj[key]
    if not isinstance(obj, dict) or not all(torch.is_tensor(v) for v in obj.values()):
        raise SystemExit(f"{path}: not a state_dict of tensors")
    return {(k[7:] if k.startswith("module.") else k): v for k, v in obj.items()}


def convert(src, dst, dtype="f32", classifier=True):
    """Writes dst from the state_dict in src; returns the number of tensors written."""
    sd = state_dict_of(torch.load(src, map_location="cpu", weights_only=True), src)
    tensors, dtypes = {}, {}
    for name, t in sd.items():
        if not classifier and name.startswith(CLASSIFIER):
            continue
        if t.is_floating_point():
            tensors[name] = t.detach().float().numpy()
            dtypes[name] = dtype.upper()
        else:
            tensors[name] = t.detach().to(torch.int64).numpy().astype(np.int64)
            dtypes[name] = "I64"
    safetensors_io.save(dst, tensors, {"format": "pt", "source": os.path.basename(src)}, dtypes)
    return len(tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="f32")
    ap.add_argument("--no-classifier", action="store_true")
    a = ap.parse_args()
    n = convert(a.src, a.dst, a.dtype, not a.no_classifier)
    print(f"{a.dst}: {n} tensors ({a.dtype}), {os.path.getsize(a.dst)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
