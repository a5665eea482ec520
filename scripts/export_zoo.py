#!/usr/bin/python3
"""Exports the model zoo: 40+ real PyTorch architectures as ONNX, random weights, fixed seeds.

Run it with Debian's python3 (python3-torch 1.13, python3-torchvision 0.14, python3-onnx), not a
pyenv/venv python that lacks torch:

    /usr/bin/python3 scripts/export_zoo.py OUT_DIR [--models resnet18,gpt2_small] [--force]
    /usr/bin/python3 scripts/export_zoo.py OUT_DIR --list

For every model NAME it writes into OUT_DIR:

    NAME.onnx           the float32 model, static shapes, one input, one output (the first)
    NAME.input.npy      the input (float32, or int64 token ids for the language models)
    NAME.expected.npy   PyTorch's output for that input, computed in float64, stored as float32
                        (detectors: computed in float32, since their NMS decisions can flip
                        between precisions; the index's "reference" says which)

and records the model in OUT_DIR/zoo_index.json (family, source, opset, shapes, ONNX node count,
status, and the exporter's error when the export failed; failures are recorded, never skipped).
A model whose three files already exist is skipped unless --force, so an interrupted run resumes.

Weights are random (no downloads). BatchNorm running statistics are calibrated on a few random
batches first, since the default mean 0 / variance 1 statistics let activations grow or collapse
layer by layer, which turns a random-weight network into a constant or an overflow. Models whose
names end in _op17 are the same network exported at opset 17 (LayerNorm becomes
LayerNormalization there); the others use opset 13.

Each model is exported in its own child process (this script with --child NAME) under a time
limit, so a crash or a hang inside the exporter costs one model and not the run.
"""
import argparse
import copy
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

INDEX_NAME = "zoo_index.json"
DEFAULT_OPSET = 13
CALIBRATION_BATCHES = 3
CALIBRATION_BATCH_SIZE = 4
WRITTEN_OUT = "written out in scripts/export_zoo.py"


# ---------------------------------------------------------------------------------------------
# The zoo: name -> how to build it. Builders run in the child process that exports the model.

class Spec:
    def __init__(self, name, family, source, build, input_shape, input_kind="randn", vocab=None,
                 opset=DEFAULT_OPSET, calibrate=None, reference="float64", note=""):
        self.name = name
        self.family = family
        self.source = source
        self.build = build              # () -> nn.Module returning one tensor
        self.input_shape = tuple(input_shape)
        self.input_kind = input_kind    # "randn", "rand" (images in [0, 1]) or "tokens"
        self.vocab = vocab
        self.opset = opset
        # (model) -> (module, input_shape) whose BatchNorms get calibrated; default: the whole model
        self.calibrate = calibrate
        # "float64": expected.npy from a float64 copy of the model (the default). "float32": from
        # the float32 model itself, for detectors, whose top-k and NMS decisions can flip between
        # precisions, so no float32 runtime could match a float64 reference.
        self.reference = reference
        self.note = note


def tv(name, **kwargs):
    """A torchvision.models builder with random weights."""
    def build():
        return FirstOutput(getattr(torchvision.models, name)(weights=None, **kwargs))
    return build


def tv_video(name):
    def build():
        return FirstOutput(getattr(torchvision.models.video, name)(weights=None))
    return build


def tv_segmentation(name):
    def build():
        return FirstOutput(getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, num_classes=21))
    return build


def tv_detection(name, **kwargs):
    def build():
        return DetectionBoxes(getattr(torchvision.models.detection, name)(
            weights=None, weights_backbone=None, **kwargs))
    return build


def detection(name, source, build, size):
    return Spec(name, "detection", source, build, (1, 3, size, size), input_kind="rand",
                calibrate=calibrate_detection_backbone(size), reference="float32",
                note="output: the boxes; expected.npy from float32 (NMS decisions)")


def calibrate_detection_backbone(size):
    # Detection models only run in train() mode with targets; calibrate their backbone alone, on
    # inputs of the size the model's own transform resizes to.
    def pick(model):
        return model.model.backbone, (CALIBRATION_BATCH_SIZE, 3, size, size)
    return pick


def build_vit_tiny():
    vit = torchvision.models.VisionTransformer(
        image_size=64, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768,
        num_classes=1000)
    # torchvision zero-initialises the classifier head (meant for fine-tuning): with random
    # weights that makes the output identically 0.
    nn.init.normal_(vit.heads.head.weight, std=0.02)
    nn.init.normal_(vit.heads.head.bias, std=0.02)
    return FirstOutput(vit)


def zoo_specs():
    image = (1, 3, 96, 96)
    specs = [
        # torchvision classification
        Spec("resnet18", "classification", "torchvision.models.resnet18", tv("resnet18"), image),
        Spec("resnet50", "classification", "torchvision.models.resnet50", tv("resnet50"), image),
        Spec("resnext50_32x4d", "classification", "torchvision.models.resnext50_32x4d",
             tv("resnext50_32x4d"), image),
        Spec("wide_resnet50_2", "classification", "torchvision.models.wide_resnet50_2",
             tv("wide_resnet50_2"), image),
        # VGG and AlexNet end in AdaptiveAvgPool2d to 7x7 / 6x6, which torch.onnx exports only
        # when the output divides the input: 224 px is the smallest size that gives exactly that.
        Spec("vgg11", "classification", "torchvision.models.vgg11", tv("vgg11"), (1, 3, 224, 224),
             note="224 px: ONNX export of its 7x7 adaptive pool needs a 7-divisible feature map"),
        Spec("vgg11_bn", "classification", "torchvision.models.vgg11_bn", tv("vgg11_bn"),
             (1, 3, 224, 224),
             note="224 px: ONNX export of its 7x7 adaptive pool needs a 7-divisible feature map"),
        Spec("alexnet", "classification", "torchvision.models.alexnet", tv("alexnet"),
             (1, 3, 224, 224),
             note="224 px: ONNX export of its 6x6 adaptive pool needs a 6-divisible feature map"),
        Spec("googlenet", "classification", "torchvision.models.googlenet",
             tv("googlenet", aux_logits=False, init_weights=True), image),
        Spec("inception_v3", "classification", "torchvision.models.inception_v3",
             tv("inception_v3", aux_logits=False, init_weights=True), image,
             note="needs >= 75 px"),
        Spec("densenet121", "classification", "torchvision.models.densenet121", tv("densenet121"),
             image),
        Spec("squeezenet1_0", "classification", "torchvision.models.squeezenet1_0",
             tv("squeezenet1_0"), image),
        Spec("squeezenet1_1", "classification", "torchvision.models.squeezenet1_1",
             tv("squeezenet1_1"), image),
        Spec("shufflenet_v2_x1_0", "classification", "torchvision.models.shufflenet_v2_x1_0",
             tv("shufflenet_v2_x1_0"), image),
        Spec("mobilenet_v2", "classification", "torchvision.models.mobilenet_v2",
             tv("mobilenet_v2"), image),
        Spec("mobilenet_v3_small", "classification", "torchvision.models.mobilenet_v3_small",
             tv("mobilenet_v3_small"), image),
        Spec("mobilenet_v3_large", "classification", "torchvision.models.mobilenet_v3_large",
             tv("mobilenet_v3_large"), image),
        Spec("mnasnet1_0", "classification", "torchvision.models.mnasnet1_0", tv("mnasnet1_0"),
             image),
        Spec("efficientnet_b0", "classification", "torchvision.models.efficientnet_b0",
             tv("efficientnet_b0"), image),
        Spec("efficientnet_v2_s", "classification", "torchvision.models.efficientnet_v2_s",
             tv("efficientnet_v2_s"), image),
        Spec("regnet_y_400mf", "classification", "torchvision.models.regnet_y_400mf",
             tv("regnet_y_400mf"), image),
        Spec("regnet_x_400mf", "classification", "torchvision.models.regnet_x_400mf",
             tv("regnet_x_400mf"), image),
        Spec("convnext_tiny", "classification", "torchvision.models.convnext_tiny",
             tv("convnext_tiny"), image),
        Spec("vit_tiny_16", "classification (transformer)",
             "torchvision.models.VisionTransformer(image_size=64, patch_size=16, num_layers=4, "
             "num_heads=3, hidden_dim=192, mlp_dim=768)", build_vit_tiny, (1, 3, 64, 64),
             note="ViT-B/16's structure at ViT-Ti width, 4 layers, 64 px"),
        Spec("swin_t", "classification (transformer)", "torchvision.models.swin_t", tv("swin_t"),
             (1, 3, 112, 112)),
        Spec("maxvit_t", "classification (transformer)", "torchvision.models.maxvit_t",
             tv("maxvit_t"), (1, 3, 224, 224), note="its partitions need 224 px"),
        # torchvision segmentation: output 'out'
        Spec("fcn_resnet50", "segmentation", "torchvision.models.segmentation.fcn_resnet50",
             tv_segmentation("fcn_resnet50"), image),
        Spec("deeplabv3_mobilenet_v3_large", "segmentation",
             "torchvision.models.segmentation.deeplabv3_mobilenet_v3_large",
             tv_segmentation("deeplabv3_mobilenet_v3_large"), image),
        Spec("lraspp_mobilenet_v3_large", "segmentation",
             "torchvision.models.segmentation.lraspp_mobilenet_v3_large",
             tv_segmentation("lraspp_mobilenet_v3_large"), image),
        # torchvision video: N x C x T x H x W
        Spec("r3d_18", "video", "torchvision.models.video.r3d_18", tv_video("r3d_18"),
             (1, 3, 4, 32, 32)),
        Spec("mc3_18", "video", "torchvision.models.video.mc3_18", tv_video("mc3_18"),
             (1, 3, 4, 32, 32)),
        Spec("r2plus1d_18", "video", "torchvision.models.video.r2plus1d_18",
             tv_video("r2plus1d_18"), (1, 3, 4, 32, 32)),
        # torchvision detection: output the first image's boxes (data-dependent count)
        detection("ssdlite320_mobilenet_v3_large",
                  "torchvision.models.detection.ssdlite320_mobilenet_v3_large",
                  tv_detection("ssdlite320_mobilenet_v3_large"), 320),
        detection("retinanet_resnet50_fpn",
                  "torchvision.models.detection.retinanet_resnet50_fpn(min_size=256, max_size=256)",
                  tv_detection("retinanet_resnet50_fpn", min_size=256, max_size=256), 256),
        detection("fasterrcnn_mobilenet_v3_large_320_fpn",
                  "torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn",
                  tv_detection("fasterrcnn_mobilenet_v3_large_320_fpn"), 320),
        # written out here: sequence models, audio, dense prediction, mixers
        Spec("transformer_encoder", "nlp (transformer)",
             "torch.nn.TransformerEncoder (4 layers, d 64, 4 heads, batch_first)",
             lambda: TorchTransformerEncoder(), (1, 32, 64)),
        Spec("transformer_decoder", "nlp (transformer)",
             "torch.nn.TransformerDecoder (4 layers, d 64, 4 heads, causal; memory from the input)",
             lambda: TorchTransformerDecoder(), (1, 16, 64)),
        Spec("bert_small", "nlp (transformer)", WRITTEN_OUT + ": BERT encoder, 4 layers, d 128, "
             "erf GELU, padding mask from the ids", lambda: BertEncoder(), (1, 32),
             input_kind="tokens", vocab=1000),
        Spec("gpt2_small", "nlp (transformer)", WRITTEN_OUT + ": GPT-2 decoder, 4 layers, d 128, "
             "causal, tanh GELU, tied LM head", lambda: Gpt2(), (1, 32), input_kind="tokens",
             vocab=512),
        Spec("lstm_lm", "nlp (rnn)", WRITTEN_OUT + ": embedding + 2-layer nn.LSTM + linear",
             lambda: LstmLanguageModel(), (1, 20), input_kind="tokens", vocab=1000),
        Spec("gru_bidirectional", "sequence (rnn)",
             WRITTEN_OUT + ": bidirectional nn.GRU classifier", lambda: BiGruClassifier(),
             (1, 24, 40)),
        Spec("rnn_tanh", "sequence (rnn)", WRITTEN_OUT + ": 2-layer nn.RNN (tanh) + linear",
             lambda: TanhRnn(), (1, 20, 32)),
        Spec("lstm_features", "sequence (rnn)",
             WRITTEN_OUT + ": single-layer nn.LSTM on float features", lambda: LstmFeatures(),
             (1, 25, 16)),
        Spec("m5_audio", "audio", WRITTEN_OUT + ": M5 raw-waveform Conv1d classifier",
             lambda: M5(), (1, 1, 4000)),
        Spec("wav2letter_small", "audio", WRITTEN_OUT + ": Wav2Letter-style Conv1d on 40 MFCCs",
             lambda: Wav2LetterSmall(), (1, 40, 100)),
        Spec("tcn", "sequence (conv)", WRITTEN_OUT + ": dilated causal Conv1d residual stack",
             lambda: Tcn(), (1, 8, 128)),
        Spec("unet_small", "segmentation", WRITTEN_OUT + ": U-Net, 3 levels, base 16 channels",
             lambda: UNetSmall(), (1, 3, 64, 64)),
        Spec("mlp_mixer_small", "classification (mixer)",
             WRITTEN_OUT + ": MLP-Mixer, patch 8, d 128, 4 blocks", lambda: MlpMixer(),
             (1, 3, 64, 64)),
        Spec("mlp", "classification (mlp)", WRITTEN_OUT + ": 784-256-128-10 ReLU MLP",
             lambda: Mlp(), (1, 784)),
    ]
    # The same networks again at opset 17: transformers (LayerNormalization), CNNs, an RNN.
    by_name = {s.name: s for s in specs}
    for name in ("resnet18", "mobilenet_v3_small", "convnext_tiny", "vit_tiny_16", "swin_t",
                 "transformer_encoder", "bert_small", "gpt2_small", "mlp_mixer_small", "lstm_lm"):
        base = by_name[name]
        specs.append(Spec(name + "_op17", base.family, base.source, base.build, base.input_shape,
                          input_kind=base.input_kind, vocab=base.vocab, opset=17,
                          calibrate=base.calibrate, note=(base.note + "; " if base.note else "")
                          + f"{name} at opset 17"))
    return specs


# ---------------------------------------------------------------------------------------------
# Model definitions, at module level so the child process can build them by name.


def first_tensor(out):
    """The first tensor of a model's output: dict ('out' first), tuple/list/namedtuple."""
    while not isinstance(out, torch.Tensor):
        if isinstance(out, dict):
            out = out["out"] if "out" in out else next(iter(out.values()))
        elif isinstance(out, (tuple, list)):
            out = out[0]
        else:
            raise TypeError(f"cannot take the first output of {type(out).__name__}")
    return out

class FirstOutput(nn.Module):
    """Keeps one output so every zoo model has exactly one output tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return first_tensor(self.model(x))

class DetectionBoxes(nn.Module):
    """torchvision detectors take a list of images and return one dict per image."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model([x[0]])[0]["boxes"]

class TorchTransformerEncoder(nn.Module):
    def __init__(self, d=64, heads=4, layers=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)

class TorchTransformerDecoder(nn.Module):
    def __init__(self, d=64, heads=4, layers=4, seq=16):
        super().__init__()
        # A single-input model: the "memory" is a projection of the input itself.
        self.memory = nn.Sequential(nn.Linear(d, d), nn.Tanh())
        layer = nn.TransformerDecoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.1,
                                           batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.register_buffer("causal", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        return self.decoder(x, self.memory(x), tgt_mask=self.causal)

class SelfAttention(nn.Module):
    """Multi-head attention written out as in BERT/GPT-2 code: q, k, v projections,
    reshape to heads, scaled scores plus an additive mask, softmax, merge heads."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, additive_mask):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + additive_mask
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, s, d))

class BertLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attn = SelfAttention(d, heads)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))  # post-norm, as in BERT
        return self.ln2(x + self.ff(x))

class BertEncoder(nn.Module):
    def __init__(self, vocab=1000, seq=32, d=128, heads=4, layers=4):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(seq, d)
        self.segments = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads) for _ in range(layers))
        self.register_buffer("position_ids", torch.arange(seq).unsqueeze(0))

    def forward(self, ids):
        # Padding (id 0) gets a large negative score, as BERT's extended attention mask does.
        keep = (ids != 0).to(self.tokens.weight.dtype)
        mask = (1.0 - keep[:, None, None, :]) * -10000.0
        x = self.tokens(ids) + self.positions(self.position_ids) + self.segments(
            torch.zeros_like(ids))
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x, mask)
        return x

def gelu_tanh(x):
    # GPT-2's "new GELU", written out the way its reference code does.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

class Gpt2Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)  # pre-norm, as in GPT-2
        return x + self.proj(gelu_tanh(self.fc(self.ln2(x))))

class Gpt2(nn.Module):
    def __init__(self, vocab=512, seq=32, d=128, heads=4, layers=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Gpt2Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("positions", torch.arange(seq).unsqueeze(0))
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(self.positions)
        mask = torch.zeros(self.causal.shape, dtype=x.dtype).masked_fill(
            ~self.causal, -1e4)
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_f(x) @ self.wte.weight.t()  # LM head tied to the token embedding

class LstmLanguageModel(nn.Module):
    def __init__(self, vocab=1000, d=64, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)

class BiGruClassifier(nn.Module):
    def __init__(self, features=40, hidden=64, classes=10):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out.mean(dim=1))

class TanhRnn(nn.Module):
    def __init__(self, features=32, hidden=64, classes=8):
        super().__init__()
        self.rnn = nn.RNN(features, hidden, num_layers=2, nonlinearity="tanh",
                          batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])

class LstmFeatures(nn.Module):
    def __init__(self, features=16, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]

def conv1d_bn_relu(cin, cout, kernel, stride=1, padding=0):
    return [nn.Conv1d(cin, cout, kernel, stride, padding), nn.BatchNorm1d(cout), nn.ReLU()]

class M5(nn.Module):
    """Dai et al.'s M5: a wide strided first Conv1d on the raw waveform, then 3 more."""

    def __init__(self, classes=35, width=32):
        super().__init__()
        self.features = nn.Sequential(
            *conv1d_bn_relu(1, width, 80, stride=4), nn.MaxPool1d(4),
            *conv1d_bn_relu(width, width, 3), nn.MaxPool1d(4),
            *conv1d_bn_relu(width, 2 * width, 3), nn.MaxPool1d(4),
            *conv1d_bn_relu(2 * width, 2 * width, 3), nn.MaxPool1d(4))
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.features(x).mean(dim=-1)
        return F.log_softmax(self.head(x), dim=-1)

class Wav2LetterSmall(nn.Module):
    def __init__(self, features=40, width=128, classes=29):
        super().__init__()
        layers = conv1d_bn_relu(features, width, 11, stride=2, padding=5)
        for _ in range(3):
            layers += conv1d_bn_relu(width, width, 7, padding=3)
        layers += conv1d_bn_relu(width, 2 * width, 15, padding=7)
        layers += conv1d_bn_relu(2 * width, 2 * width, 1)
        self.body = nn.Sequential(*layers)
        self.head = nn.Conv1d(2 * width, classes, 1)

    def forward(self, x):
        return F.log_softmax(self.head(self.body(x)), dim=1)

class CausalConv1d(nn.Module):
    def __init__(self, cin, cout, kernel, dilation):
        super().__init__()
        self.left = (kernel - 1) * dilation  # pad the past only: no look-ahead
        self.conv = nn.Conv1d(cin, cout, kernel, dilation=dilation)

    def forward(self, x):
        return self.conv(F.pad(x, (self.left, 0)))

class TcnBlock(nn.Module):
    def __init__(self, cin, cout, kernel, dilation):
        super().__init__()
        self.body = nn.Sequential(CausalConv1d(cin, cout, kernel, dilation), nn.ReLU(),
                                  CausalConv1d(cout, cout, kernel, dilation), nn.ReLU())
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.skip(x))

class Tcn(nn.Module):
    def __init__(self, features=8, width=32, kernel=3, classes=5):
        super().__init__()
        blocks, cin = [], features
        for dilation in (1, 2, 4, 8):
            blocks.append(TcnBlock(cin, width, kernel, dilation))
            cin = width
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Conv1d(width, classes, 1)

    def forward(self, x):
        return self.head(self.blocks(x))

def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())

class UNetSmall(nn.Module):
    def __init__(self, cin=3, classes=2, base=16):
        super().__init__()
        widths = [base, 2 * base, 4 * base]
        self.down = nn.ModuleList()
        for w in widths:
            self.down.append(double_conv(cin, w))
            cin = w
        self.bottom = double_conv(widths[-1], 2 * widths[-1])
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        cin = 2 * widths[-1]
        for w in reversed(widths):
            self.up.append(nn.ConvTranspose2d(cin, w, 2, stride=2))
            self.merge.append(double_conv(2 * w, w))
            cin = w
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.head(x)

class MixerBlock(nn.Module):
    def __init__(self, tokens, d, token_hidden, channel_hidden):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(),
                                       nn.Linear(token_hidden, tokens))
        self.ln2 = nn.LayerNorm(d)
        self.channel_mlp = nn.Sequential(nn.Linear(d, channel_hidden), nn.GELU(),
                                         nn.Linear(channel_hidden, d))

    def forward(self, x):
        x = x + self.token_mlp(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.ln2(x))

class MlpMixer(nn.Module):
    def __init__(self, image=64, patch=8, d=128, blocks=4, classes=100):
        super().__init__()
        tokens = (image // patch) ** 2
        self.stem = nn.Conv2d(3, d, patch, stride=patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, d, 64, 4 * d) for _ in range(blocks)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)  # N x tokens x d
        return self.head(self.ln(self.blocks(x)).mean(dim=1))

class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                 nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)

# ---------------------------------------------------------------------------------------------
# Exporting one model (runs in the child process).

def make_input(spec, shape, generator):
    if spec.input_kind == "tokens":
        # ids from 1: id 0 is padding for the BERT-style model; pad the tail of its sequence.
        ids = torch.randint(1, spec.vocab, shape, generator=generator, dtype=torch.int64)
        if spec.name.startswith("bert"):
            ids[..., -4:] = 0
        return ids
    if spec.input_kind == "rand":
        return torch.rand(shape, generator=generator)
    return torch.randn(shape, generator=generator)


def calibrate_batchnorm(spec, model, generator):
    """Running statistics from a few random batches (cumulative average), then eval()."""
    module, shape = (spec.calibrate(model) if spec.calibrate
                     else (model, (CALIBRATION_BATCH_SIZE,) + spec.input_shape[1:]))
    norms = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if norms:
        for bn in norms:
            bn.reset_running_stats()
            bn.momentum = None
        module.train()
        with torch.no_grad():
            for _ in range(CALIBRATION_BATCHES):
                module(make_input(spec, shape, generator))
    model.eval()
    return len(norms)


def rel_l2(a, b):
    a = a.detach().double().flatten()
    b = b.detach().double().flatten()
    ref = torch.linalg.norm(b).item()
    diff = torch.linalg.norm(a - b).item()
    return diff / ref if ref > 0 else (0.0 if diff == 0 else float("inf"))


def export_one(spec, out_dir):
    """Builds, calibrates and exports one model; returns its index entry fields."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1234)
    info = {}
    model = spec.build()
    info["parameters"] = sum(p.numel() for p in model.parameters())
    info["batchnorms"] = calibrate_batchnorm(spec, model, generator)
    x = make_input(spec, spec.input_shape, generator)

    with torch.no_grad():
        out32 = model(x)
        reference = copy.deepcopy(model).double()
        expected = reference(x if x.dtype == torch.int64 else x.double())
    if not isinstance(out32, torch.Tensor) or not isinstance(expected, torch.Tensor):
        raise TypeError("the model must return one tensor")
    # How far PyTorch's own float32 run is from float64: the floor any float32 runtime can reach.
    info["torch_fp32_rel_l2"] = (rel_l2(out32, expected) if out32.shape == expected.shape
                                 else None)
    info["reference"] = spec.reference
    if spec.reference == "float32":
        expected = out32
    info["output_shape"] = list(expected.shape)
    info["expected_abs_max"] = float(expected.abs().max()) if expected.numel() else 0.0
    info["expected_std"] = float(expected.std()) if expected.numel() > 1 else 0.0
    if not math.isfinite(info["expected_abs_max"]):
        raise ValueError("the float64 reference output is not finite")
    if expected.numel() > 1 and info["expected_std"] == 0.0:
        # A constant output (e.g. a zero-initialised head) would check nothing downstream.
        raise ValueError("the float64 reference output is constant; re-initialise the model")

    onnx_path = out_dir / f"{spec.name}.onnx"
    tmp_path = out_dir / f".{spec.name}.onnx.tmp"
    # Traced with autograd on, as a user's export would be: under no_grad, torch 1.13's
    # TransformerEncoderLayer and MultiheadAttention take a fused "fast path" op that has no ONNX
    # export. Parameters require grad here, so they keep to the plain ops.
    torch.onnx.export(model, (x,), str(tmp_path), opset_version=spec.opset,
                      do_constant_folding=True, input_names=["input"], output_names=["output"])
    graph = onnx.load(str(tmp_path))
    info["nodes"] = len(graph.graph.node)
    ops = {}
    for node in graph.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    info["op_types"] = dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))
    info["onnx_outputs"] = len(graph.graph.output)
    info["onnx_bytes"] = tmp_path.stat().st_size

    # The .onnx is renamed into place last: its presence marks a finished export.
    np.save(out_dir / f"{spec.name}.input.npy", x.numpy())
    np.save(out_dir / f"{spec.name}.expected.npy", expected.float().numpy())
    os.replace(tmp_path, onnx_path)
    return info


def child_main(name, out_dir, result_path):
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    spec = {s.name: s for s in zoo_specs()}[name]
    start = time.monotonic()
    try:
        entry = {"status": "ok", **export_one(spec, out_dir)}
    except Exception as err:  # recorded in the index: a failure is a result, not a crash
        lines = [l for l in traceback.format_exception_only(type(err), err)]
        text = "".join(lines).strip()
        entry = {"status": "export_failed", "error": "\n".join(text.splitlines()[:6])[:2000],
                 "traceback_tail": "".join(traceback.format_exc().splitlines(True)[-8:])[-3000:]}
    entry["export_seconds"] = round(time.monotonic() - start, 2)
    Path(result_path).write_text(json.dumps(entry))
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: schedules children, keeps the index.

def load_index(out_dir):
    path = out_dir / INDEX_NAME
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError:
        print(f"export_zoo: warning: {path} is not JSON; starting a new index", file=sys.stderr)
        return {}
    return {e["name"]: e for e in data.get("models", [])}


def save_index(out_dir, entries, order):
    ranked = {name: i for i, name in enumerate(order)}
    models = sorted(entries.values(), key=lambda e: (ranked.get(e["name"], len(ranked)), e["name"]))
    data = {"generator": "scripts/export_zoo.py",
            "torch": _version("torch"), "torchvision": _version("torchvision"),
            "onnx": _version("onnx"), "models": models}
    tmp = out_dir / (INDEX_NAME + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, out_dir / INDEX_NAME)


def _version(module):
    return {"torch": torch, "torchvision": torchvision, "onnx": onnx}[module].__version__


def files_exist(out_dir, name):
    return all((out_dir / f"{name}{suffix}").is_file()
               for suffix in (".onnx", ".input.npy", ".expected.npy"))


def run_child(spec, out_dir, timeout):
    """Exports one model in a fresh process; returns its result dict (failures included)."""
    with tempfile.TemporaryDirectory(prefix="export_zoo_") as tmp:
        result_path = Path(tmp) / "result.json"
        log_path = Path(tmp) / "log"
        argv = [sys.executable, str(Path(__file__).resolve()), str(out_dir), "--child", spec.name,
                "--result", str(result_path)]
        start = time.monotonic()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the child's own group only
                proc.wait()
                rc = None
        seconds = round(time.monotonic() - start, 2)
        if result_path.is_file():
            return json.loads(result_path.read_text())
        tail = log_path.read_text(errors="replace").strip().splitlines()[-6:]
        why = (f"timed out after {timeout:.0f} s" if rc is None
               else f"exporter process died (exit {rc})")
        return {"status": "export_failed", "error": why + (": " + "\n".join(tail) if tail else ""),
                "export_seconds": seconds}


def parse_args(argv):
    p = argparse.ArgumentParser(description="Export the ONNX model zoo (random weights).")
    p.add_argument("out_dir", type=Path, nargs="?", help="output directory")
    p.add_argument("--models", help="comma-separated names (default: all; see --list)")
    p.add_argument("--list", action="store_true", help="print the zoo's models and exit")
    p.add_argument("--force", action="store_true", help="export again even if the files exist")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per model")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.out_dir is None and not args.list:
        p.error("OUT_DIR is required")
    return args


def main(argv):
    args = parse_args(argv)
    specs = zoo_specs()
    if args.list:
        for s in specs:
            print(f"{s.name:40s} opset {s.opset}  {s.family:30s} {'x'.join(map(str, s.input_shape))}")
        return 0
    out_dir = args.out_dir.resolve()
    if args.child:
        return child_main(args.child, out_dir, args.result)

    by_name = {s.name: s for s in specs}
    if args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in by_name]
        if unknown:
            print(f"export_zoo: unknown model(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
            return 2
    else:
        names = [s.name for s in specs]
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = load_index(out_dir)
    order = [s.name for s in specs]

    total_start = time.monotonic()
    for i, name in enumerate(names, 1):
        spec = by_name[name]
        prefix = f"[{i}/{len(names)}] {name}"
        if not args.force and files_exist(out_dir, name) and entries.get(name, {}).get("status") == "ok":
            print(f"{prefix}: exists, skipped", flush=True)
            continue
        result = run_child(spec, out_dir, args.timeout)
        entry = {"name": name, "family": spec.family, "source": spec.source, "opset": spec.opset,
                 "input_shape": list(spec.input_shape),
                 "input_dtype": "int64" if spec.input_kind == "tokens" else "float32",
                 "note": spec.note, **result}
        entries[name] = entry
        save_index(out_dir, entries, order)
        if entry["status"] == "ok":
            fp = entry.get("torch_fp32_rel_l2")
            print(f"{prefix}: ok, {entry['nodes']} nodes, out {entry['output_shape']}, "
                  f"torch fp32 vs fp64 {fp:.1e}, {entry['export_seconds']:.1f} s" if fp is not None
                  else f"{prefix}: ok, {entry['nodes']} nodes, {entry['export_seconds']:.1f} s",
                  flush=True)
        else:
            first = entry["error"].splitlines()[0] if entry.get("error") else "?"
            print(f"{prefix}: EXPORT FAILED ({entry['export_seconds']:.1f} s): {first}", flush=True)

    ok = sum(1 for n in names if entries.get(n, {}).get("status") == "ok")
    print(f"export_zoo: {ok}/{len(names)} exported ok into {out_dir} "
          f"in {time.monotonic() - total_start:.0f} s; index {out_dir / INDEX_NAME}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
