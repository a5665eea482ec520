#!/usr/bin/python3
"""Exports the test models with Debian's python3-torch: random weights, fixed seed.

For each model writes NAME.onnx, NAME.input.npy and NAME.expected.npy (PyTorch's output on
that input) into the output folder. Models: resnet18 (torchvision's architecture, written out
here so torchvision is not needed), mobilenet_v2 (torchvision's MobileNet-V2, width 1.0, also
written out here), transformer_encoder (a BERT-style 2-layer encoder with GELU via erf),
tiny_cnn (the small model bundled in examples/). With no model names, all of them.

usage: /usr/bin/python3 scripts/export_models.py OUT_DIR [resnet18 mobilenet_v2 transformer_encoder tiny_cnn]
"""
import inspect
import os
import sys

import numpy as np
import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers = []
        cin = 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def conv_bn_relu6(cin, cout, kernel, stride, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """1x1 expand (skipped when t == 1), 3x3 depthwise, 1x1 linear projection (no activation)."""

    def __init__(self, cin, cout, stride, expand_ratio):
        super().__init__()
        hidden = cin * expand_ratio
        self.use_res_connect = stride == 1 and cin == cout
        layers = []
        if expand_ratio != 1:
            layers.append(conv_bn_relu6(cin, hidden, 1, 1))
        layers += [conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, 1, 0, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        # torchvision's table: expand ratio t, output channels c, repeats n, first stride s.
        settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        cin = 32
        features = [conv_bn_relu6(3, cin, 3, 2)]
        for t, c, n, s in settings:
            for i in range(n):
                features.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        features.append(conv_bn_relu6(cin, 1280, 1, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))
        # torchvision's initialisation: kaiming fan-out convs, small normal classifier.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class EncoderLayer(nn.Module):
    """Post-norm BERT layer: self-attention and a GELU feed-forward, each with a residual."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        def heads(t):
            return t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        attn = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        x = self.norm1(x + self.proj(attn))
        ff = self.ff2(0.5 * self.ff1(x) * (1.0 + torch.erf(self.ff1(x) / 2 ** 0.5)))
        return self.norm2(x + ff)


class TransformerEncoder(nn.Module):
    def __init__(self, vocab=1000, d_model=128, heads=4, d_ff=512, layers=2, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.randn(1, max_len, d_model) * 0.02)
        self.layers = nn.ModuleList([EncoderLayer(d_model, heads, d_ff) for _ in range(layers)])

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[:, : tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return x


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10), nn.Softmax(dim=1))

    def forward(self, x):
        return self.body(x)


def randomize_batchnorm(model):
    # Fresh BatchNorm layers are identities; give them real statistics so folding is tested.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)


def export(name, model, example, out_dir):
    model.eval()
    with torch.no_grad():
        expected = model(example)
    path = os.path.join(out_dir, name + ".onnx")
    input_name = "tokens" if example.dtype == torch.int64 else "input"
    # PRESERVE keeps BatchNormalization nodes (an eval-mode export folds them into the convs),
    # so tessel's own folding is what removes them.
    kwargs = dict(input_names=[input_name], output_names=["output"], opset_version=17,
                  do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    # PyTorch 2.9 made the dynamo exporter the default; these models are written for the
    # TorchScript one (Debian's PyTorch has only that), so ask for it where there is a choice.
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(model, (example,), path, **kwargs)
    np.save(os.path.join(out_dir, name + ".input.npy"), example.numpy())
    np.save(os.path.join(out_dir, name + ".expected.npy"), expected.numpy())
    print("wrote", path)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    which = sys.argv[2:] or ["resnet18", "mobilenet_v2", "transformer_encoder", "tiny_cnn"]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    with torch.no_grad():
        if "resnet18" in which:
            model = ResNet18()
            randomize_batchnorm(model)
            export("resnet18", model, torch.rand(1, 3, 224, 224), out_dir)
        if "mobilenet_v2" in which:
            # Its own RNG stream, so adding it leaves the other models' weights and inputs as they were.
            with torch.random.fork_rng():
                torch.manual_seed(0)
                model = MobileNetV2()
                randomize_batchnorm(model)
                export("mobilenet_v2", model, torch.rand(1, 3, 224, 224), out_dir)
        if "transformer_encoder" in which:
            export("transformer_encoder", TransformerEncoder(), torch.randint(0, 1000, (1, 32)), out_dir)
        if "tiny_cnn" in which:
            model = TinyCnn()
            randomize_batchnorm(model)
            export("tiny_cnn", model, torch.rand(1, 3, 32, 32), out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
