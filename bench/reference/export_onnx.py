"""export_onnx.py: the encoders' cut networks as ONNX files, for ONNX Runtime (bench_ort.js).

    /usr/bin/python3 bench/reference/export_onnx.py ARCH OUT.onnx [--batch 16] [--size 224]
        [--check IN.bin REF.bin]

ARCH is vgg19 (torchvision's VGG-19 features to conv5_4 after its ReLU, before the last
pool) or resnet101 (torchvision's ResNet-101 to layer4), both the networks that
bench_encoders.py times on the PyTorch side, with the same random weights (seed 1), in eval
mode. torch.onnx.export (opset 13) writes the graph with a fixed batch and size: the input
"image" (BATCH, 3, SIZE, SIZE), the output "features". With --check, one random batch
(seed 2) goes to IN.bin and torchvision's output on it to REF.bin, both raw little-endian
float32, so that bench_ort.js can print the largest difference between ONNX Runtime's
output and torchvision's (the peer must compute the same network).
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("arch", choices=["vgg19", "resnet101"])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--check", nargs=2, metavar=("IN", "REF"))
    a = ap.parse_args()
    import torch
    import bench_encoders
    net = bench_encoders.cut_network(a.arch, torch.Generator().manual_seed(1)).eval()
    x = torch.randn(a.batch, 3, a.size, a.size, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.onnx.export(net, x, a.out, input_names=["image"], output_names=["features"],
                          opset_version=13, do_constant_folding=True)
        if a.check:
            y = net(x)
            x.numpy().astype("<f4").tofile(a.check[0])
            y.numpy().astype("<f4").tofile(a.check[1])
    print(f"{a.arch}: {a.out}, input {list(x.shape)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
