"""encoders_ref.py: torchvision's VGG and ResNet encoders as the parity references of
vision/encoder.h, and the ImageNet preprocessing of vision/preprocess.h.

    /usr/bin/python3 bench/reference/encoders_ref.py fixtures OUTDIR   # what `make fixtures` runs
    /usr/bin/python3 bench/reference/encoders_ref.py full OUTDIR       # `make parity-encoders`

Seven architectures (vgg16, vgg19, resnet18, resnet34, resnet50, resnet101, resnet152) built
with torchvision's own modules (VGG's make_layers; ResNet's BasicBlock, Bottleneck and
_make_layer), random weights and random batch-norm statistics (gamma U(0.5, 1.5), beta
N(0, 0.2), running_mean N(0, 0.2), running_var U(0.5, 2)), run in eval mode in float64 on
float32 inputs, cut where the encoder cuts (VGG: after the last convolution's ReLU, before
the last pool; ResNet: after layer4, resnet50 also after layer3). Outputs are stored as
annotations (B, L, D), L = G G row-major.

fixtures: at reduced width (the same depth, kernels, strides and blocks; channels divided
by 16 or 32) for two photographs at S = 96 (Resize(110) + CenterCrop(96)), written to OUTDIR:
    encoders/ARCH.safetensors    the weights with torchvision's state_dict names, the
                                 classifier (fc.*, classifier.*, head.fc.*) and I64
                                 num_batches_tracked included, in F32, F16 or BF16 (the
                                 reference runs the rounded values)
    encoders/outputs.safetensors input/NAME (3, S, S): torchvision's transform on a float
                                 tensor (F.resize with antialias=True, F.center_crop,
                                 normalize), rounded to F16; output/ARCH (2, L, D);
                                 prep/NAME, pil/NAME (below); metadata: S, resize
The photographs are skimage's chelsea.png (CC0, Stefan van der Walt) and coffee.png (CC0,
Rachel Michetti), scaled to 128 px on the short side and kept as encoders/NAME.png.
The preprocessing check: prep/NAME (3, 32, 32), the tensor transform with Resize(48) +
CenterCrop(32) (a 2.7x antialiased downscale), and pil/NAME the PIL pipeline's 8-bit values.

full: torchvision's full-width models with random weights: each state_dict is saved as a
.pth, turned into safetensors by pth_to_safetensors.py, and the outputs at S = 224 (Resize(256)
+ CenterCrop(224) of the same photographs) written to OUTDIR/parity.safetensors for
build/bench/parity_encoders.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as TF
from PIL import Image

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pth_to_safetensors  # noqa: E402
import safetensors_io  # noqa: E402

from torchvision.models.resnet import BasicBlock, Bottleneck  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
VGG_CFG = {
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}
RESNET = {"resnet18": (BasicBlock, [2, 2, 2, 2]), "resnet34": (BasicBlock, [3, 4, 6, 3]),
          "resnet50": (Bottleneck, [3, 4, 6, 3]), "resnet101": (Bottleneck, [3, 4, 23, 3]),
          "resnet152": (Bottleneck, [3, 8, 36, 3])}
ARCHS = ["vgg16", "vgg19", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]
# Reduced-width fixtures: (width divisor, dtype of the stored weights).
FIXTURE = {"vgg16": (32, "BF16"), "vgg19": (32, "F16"), "resnet18": (32, "F32"),
           "resnet34": (32, "F16"), "resnet50": (32, "BF16"), "resnet101": (32, "F16"),
           "resnet152": (32, "F16")}
PHOTOS = ["chelsea", "coffee"]


def build(arch, div=1):
    """torchvision's architecture with every width divided by div (1: the real model)."""
    if arch in VGG_CFG:
        if div == 1:
            return getattr(torchvision.models, arch)(weights=None)
        cfg = [v if v == "M" else v // div for v in VGG_CFG[arch]]
        m = nn.Module()
        m.features = torchvision.models.vgg.make_layers(cfg)
        m.classifier = nn.Sequential(nn.Linear(cfg[-2], 5))  # read past by the loader
        return m
    if div == 1:
        return getattr(torchvision.models, arch)(weights=None)
    block, layers = RESNET[arch]
    w = 64 // div
    m = torchvision.models.resnet.ResNet.__new__(torchvision.models.resnet.ResNet)
    nn.Module.__init__(m)
    m._norm_layer, m.inplanes, m.dilation, m.groups, m.base_width = nn.BatchNorm2d, w, 1, 1, 64
    m.conv1 = nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)
    m.bn1, m.relu = nn.BatchNorm2d(w), nn.ReLU(inplace=True)
    m.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
    m.layer1 = m._make_layer(block, w, layers[0])
    m.layer2 = m._make_layer(block, 2 * w, layers[1], stride=2)
    m.layer3 = m._make_layer(block, 4 * w, layers[2], stride=2)
    m.layer4 = m._make_layer(block, 8 * w, layers[3], stride=2)
    m.avgpool, m.fc = nn.AdaptiveAvgPool2d((1, 1)), nn.Linear(8 * w * block.expansion, 5)
    return m


def randomize(model, gen):
    """Random conv weights (Kaiming normal, fan out, as torchvision initialises them) and
    batch-norm statistics and affine parameters, all drawn from gen. The last batch norm of
    each residual block gets gamma U(0.2, 0.5) instead, so that activations stay O(1) over
    50 blocks (trained networks' residual branches are small too; torchvision's
    zero_init_residual sets that gamma to 0)."""
    last = set()
    for mod in model.modules():
        if isinstance(mod, Bottleneck):
            last.add(id(mod.bn3))
        elif isinstance(mod, BasicBlock):
            last.add(id(mod.bn2))
    for mod in model.modules():
        if isinstance(mod, nn.Conv2d):
            fan_out = mod.out_channels * mod.kernel_size[0] * mod.kernel_size[1]
            mod.weight.data = torch.randn(mod.weight.shape, generator=gen) * math.sqrt(2.0 / fan_out)
            if mod.bias is not None:
                mod.bias.data = 0.1 * torch.randn(mod.bias.shape, generator=gen)
        elif isinstance(mod, nn.BatchNorm2d):
            n = mod.num_features
            lo, span = (0.2, 0.3) if id(mod) in last else (0.5, 1.0)
            mod.weight.data = lo + span * torch.rand(n, generator=gen)
            mod.bias.data = 0.2 * torch.randn(n, generator=gen)
            mod.running_mean = 0.2 * torch.randn(n, generator=gen)
            mod.running_var = 0.5 + 1.5 * torch.rand(n, generator=gen)
            mod.num_batches_tracked.fill_(1000)
    model.eval()
    return model


def round_to(model, dtype):
    """Rounds every floating tensor of the model to dtype (F32, F16, BF16), in place."""
    with torch.no_grad():
        for t in list(model.parameters()) + [b for b in model.buffers() if b.is_floating_point()]:
            if dtype == "F16":
                t.copy_(t.half().float())
            elif dtype == "BF16":
                t.copy_(t.bfloat16().float())


def forward_to_cut(model, arch, x, cut=4):
    """The encoder's output (B, D, G, G) in float64."""
    with torch.no_grad():
        if arch in VGG_CFG:
            return model.features[:-1](x)  # all but the last pool
        x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
        for k in range(1, cut + 1):
            x = getattr(model, f"layer{k}")(x)
        return x


def annotations(feat):
    """(B, D, G, G) -> (B, G G, D) float32 numpy."""
    B, D = feat.shape[:2]
    return feat.permute(0, 2, 3, 1).reshape(B, -1, D).float().numpy()


def preprocess_tensor(img, S, resize):
    """torchvision's transform on a float tensor: Resize(resize, antialias) + CenterCrop(S)
    + Normalize, float32 (3, S, S)."""
    t = TF.pil_to_tensor(img).float() / 255.0
    t = TF.resize(t, resize, interpolation=T.InterpolationMode.BILINEAR, antialias=True)
    t = TF.center_crop(t, S)
    return TF.normalize(t, MEAN, STD)


def preprocess_pil_u8(img, S, resize):
    """The usual PIL pipeline up to ToTensor: Resize + CenterCrop on the 8-bit image, as
    0..255 values (3, S, S)."""
    im = T.CenterCrop(S)(T.Resize(resize)(img))
    return torch.from_numpy(np.asarray(im, dtype=np.float32)).permute(2, 0, 1)


def photo_fixture(name, outdir):
    """Writes outdir/NAME.png (short side 128) from skimage's photograph; returns its path."""
    path = os.path.join(outdir, name + ".png")
    src = f"/usr/lib/python3/dist-packages/skimage/data/{name}.png"
    if os.path.exists(src):
        im = Image.open(src).convert("RGB")
        w, h = im.size
        k = 128 / min(w, h)
        im = im.resize((round(w * k), round(h * k)), Image.LANCZOS)
        im.save(path, optimize=True)
    elif not os.path.exists(path):
        raise SystemExit(f"{src} is missing: apt-get install python3-skimage")
    return path


def make_fixtures(outdir):
    d = os.path.join(outdir, "encoders")
    os.makedirs(d, exist_ok=True)
    S, resize = 96, 110
    PS, presize = 32, 48  # the preprocessing check: a 128 -> 48 px downscale (antialiased)
    photos = [Image.open(photo_fixture(n, d)).convert("RGB") for n in PHOTOS]
    # The encoders' inputs, rounded to F16 (both sides run the rounded values).
    inputs = torch.stack([preprocess_tensor(im, S, resize) for im in photos]).half().float()
    out, dtypes = {}, {}
    for i, n in enumerate(PHOTOS):
        out[f"input/{n}"], dtypes[f"input/{n}"] = inputs[i].numpy(), "F16"
        out[f"prep/{n}"] = preprocess_tensor(photos[i], PS, presize).numpy()
        out[f"pil/{n}"], dtypes[f"pil/{n}"] = preprocess_pil_u8(photos[i], PS, presize).numpy(), "F16"
    meta = {"S": S, "resize": resize, "prep_S": PS, "prep_resize": presize,
            "photos": ",".join(PHOTOS),
            "generator": "bench/reference/encoders_ref.py (PyTorch " + torch.__version__ +
                         ", torchvision " + torchvision.__version__ + ")"}
    x = inputs.double()
    for k, arch in enumerate(ARCHS):
        div, dtype = FIXTURE[arch]
        gen = torch.Generator().manual_seed(100 + k)
        model = randomize(build(arch, div), gen)
        if arch == "vgg19":  # timm's names for a VGG classifier
            del model.classifier
            model.pre_logits = nn.Module()
            model.pre_logits.fc1 = nn.Conv2d(16, 6, 3)
            model.head = nn.Module()
            model.head.fc = nn.Linear(6, 5)
        round_to(model, dtype)
        sd = model.state_dict()
        tensors = {n: t.numpy() for n, t in sd.items()}
        wdt = {n: (dtype if t.is_floating_point() else "I64") for n, t in sd.items()}
        path = os.path.join(d, arch + ".safetensors")
        safetensors_io.save(path, tensors, {"arch": arch, "width_divisor": div}, wdt)
        model = model.double()
        cuts = [4, 3] if arch == "resnet50" else [4]
        for cut in cuts:
            feat = forward_to_cut(model, arch, x, cut)
            key = f"output/{arch}" + ("" if cut == 4 else "@layer3")
            out[key] = annotations(feat)
            print(f"{path}: {key} {tuple(out[key].shape)}, |max| {feat.abs().max():.4g}, "
                  f"mean {feat.mean():.4g} ({os.path.getsize(path)} bytes)")
    path = os.path.join(d, "outputs.safetensors")
    safetensors_io.save(path, out, meta, dtypes)
    print(f"{path}: {os.path.getsize(path)} bytes")


def full_parity(outdir):
    os.makedirs(outdir, exist_ok=True)
    S, resize = 224, 256
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                        "fixtures", "encoders")
    photos = [Image.open(os.path.join(here, n + ".png")).convert("RGB") for n in PHOTOS]
    inputs = torch.stack([preprocess_tensor(im, S, resize) for im in photos])
    out = {"input": inputs.numpy()}
    x = inputs.double()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for k, arch in enumerate(ARCHS):
        gen = torch.Generator().manual_seed(200 + k)
        model = randomize(build(arch), gen)
        pth = os.path.join(outdir, arch + ".pth")
        torch.save(model.state_dict(), pth)
        n = pth_to_safetensors.convert(pth, os.path.join(outdir, arch + ".safetensors"))
        os.remove(pth)
        feat = forward_to_cut(model.double(), arch, x)
        out[f"output/{arch}"] = annotations(feat)
        print(f"{arch}: {n} tensors converted from .pth; output {tuple(feat.shape)}, "
              f"|max| {feat.abs().max():.4g}", flush=True)
        del model
    safetensors_io.save(os.path.join(outdir, "parity.safetensors"), out,
                        {"S": S, "resize": resize, "archs": ",".join(ARCHS)})
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("fixtures", "full"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if sys.argv[1] == "fixtures":
        make_fixtures(sys.argv[2])
        return 0
    return full_parity(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
