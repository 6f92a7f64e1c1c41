#!/usr/bin/env python3
"""Builds the ONNX models Tyche's graph importer and executor are tested and benchmarked on, from
scratch with onnx.helper and seeded random weights (nothing is downloaded).

    python3 scripts/make_models.py --out DIR [--models NAME,NAME...] [--list] [--check]

writes DIR/<name>.onnx for each model (all of them by default) and prints one line per model:
its name, path, node count and parameter count (the elements of its floating-point
initializers). --list prints the names and what each model is, and builds nothing; --check also
runs each written model once in onnxruntime (if installed) and prints its time and output stats.

Importable too (put scripts/ on sys.path):

    from make_models import build_model, example_inputs
    model = build_model("resnet_small")      # an onnx.ModelProto, checked
    feeds = example_inputs("resnet_small")   # {input name: numpy array}

The _int8 models are their float model quantized by onnxruntime's quantizer (_quantized; built
only when asked for: they need onnxruntime). The light_ models are the nine model-zoo
architectures the onnx wheel ships with light weights (written only when asked for). Every other model is opset 17 with ir_version 8 (so older runtimes read it), float32, with static
shapes. Each has its own fixed seed (MODELS), so a model's bytes are the same on every run (on
another machine the BatchNormalization statistics, computed in float64 by numpy's BLAS, may differ
in their last bits).
  - resnet50 / resnet_small: ResNet v1.5 (the stride on the bottleneck's 3x3 conv), Conv without
    bias + BatchNormalization + Relu, MaxPool 3x3/2 pad 1, residual Add, GlobalAveragePool,
    Flatten, Gemm. He-initialised convolutions, and BatchNormalization whose running mean and var
    are its input's statistics on a calibration image (jittered: var times U(0.5, 1.5); scale
    U(0.5, 1.5), bias small), keep the activations O(1) through the residual sums.
  - mobilenetv2 / mobilenet_small: inverted residual blocks (1x1 expand, 3x3 depthwise Conv with
    group = channels, 1x1 linear projection), each conv followed by BatchNormalization, ReLU6 as
    Clip with min 0 and max 6 given as constant inputs, residual Add where the stride is 1 and the
    widths match, GlobalAveragePool, Reshape to [1, C], Gemm. BatchNormalization as for ResNet.
  - bert_base / bert_small: a BERT encoder: word and position embeddings by Gather, the token
    type embedding as a constant Add, LayerNormalization (the opset-17 op), the additive
    attention mask from `attention_mask` (Cast, Sub from 1, Mul by -10000, Unsqueeze to
    [1,1,1,S]), and per layer: Q/K/V MatMul+Add, Reshape to heads, Transpose (K to [.., d, S]),
    MatMul, Div by sqrt(d), Add mask, Softmax, MatMul with V, Transpose, Reshape, output
    projection, residual Add + LayerNormalization, FFN with GELU in the Erf form
    x * 0.5 * (1 + Erf(x / sqrt 2)), residual Add + LayerNormalization. Weights have std 0.02.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


class Builder:
    """Accumulates the nodes and initializers of one graph; names are unique by construction."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.counts: dict[str, int] = {}
        self.consts: dict[tuple, str] = {}
        # The CNN builders compute each activation as they add its node (float64 numpy, on one
        # calibration image drawn from the model's seed) so that BatchNormalization's running
        # statistics can follow the activations they normalize, as a trained network's do; see bn().
        self.val: dict[str, np.ndarray] = {}

    def fresh(self, base: str) -> str:
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        return f"{base}_{n}" if n else base

    def init(self, name: str, value: np.ndarray) -> str:
        name = self.fresh(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def const(self, value, dtype=np.float32) -> str:
        """A shared constant initializer (scalars, shapes, axes)."""
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self.consts:
            self.consts[key] = self.init("const", arr)
        return self.consts[key]

    def node(self, op: str, inputs: list[str], name: str | None = None, n_out: int = 1, **attrs) -> str | list[str]:
        base = self.fresh(name or op.lower())
        outs = [base] if n_out == 1 else [f"{base}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=base, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, graph_name: str, inputs, outputs, doc: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="tyche-make_models", doc_string=doc)
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model

    # ---- layers (the CNN ones also compute their value in self.val) ----

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, name: str = "conv",
             bias: bool = False) -> str:
        fan_in = (cin // group) * k * k
        w = (self.rng.standard_normal((cout, cin // group, k, k)) * math.sqrt(2.0 / fan_in)).astype(np.float32)
        ins = [x, self.init(f"{name}.weight", w)]
        b = None
        if bias:
            b = self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)
            ins.append(self.init(f"{name}.bias", b))
        p = k // 2
        y = self.node("Conv", ins, name=name, kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p],
                      group=group, dilations=[1, 1])
        if x in self.val:
            v = _np_conv(self.val[x], w.astype(np.float64), stride, p, group)
            self.val[y] = v if b is None else v + b.reshape(1, -1, 1, 1)
        return y

    def relu(self, x: str, name: str, lo: str | None = None, hi: str | None = None) -> str:
        """Relu, or Clip(x, lo, hi) (ReLU6) when lo and hi are given."""
        y = self.node("Clip", [x, lo, hi], name=name) if lo else self.node("Relu", [x], name=name)
        if x in self.val:
            self.val[y] = np.clip(self.val[x], 0.0, 6.0 if lo else None)
        return y

    def add(self, a: str, b: str, name: str) -> str:
        y = self.node("Add", [a, b], name=name)
        if a in self.val and b in self.val:
            self.val[y] = self.val[a] + self.val[b]
        return y

    def max_pool(self, x: str, name: str) -> str:
        """MaxPool 3x3, stride 2, pads 1."""
        y = self.node("MaxPool", [x], name=name, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        if x in self.val:
            xp = np.pad(self.val[x], ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
            win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
            self.val[y] = win.max(axis=(-2, -1))
        return y

    def bn(self, x: str, c: int, name: str = "bn") -> str:
        """Scale ~ U(0.5, 1.5), bias ~ U(-0.1, 0.1); the running mean is the input's channel mean
        on the calibration image plus a small offset (0.1 of its spread at most), the running var
        its channel variance times U(0.5, 1.5): inference statistics near the real ones, so every
        BatchNormalization's output is O(1) however deep the residual sums (with mean ~ 0 and
        var ~ U(0.5, 1.5) outright, ResNet-50's logits reach 1e4). Without a calibration value,
        mean ~ U(-0.1, 0.1) and var ~ U(0.5, 1.5)."""
        r = self.rng
        scale = r.uniform(0.5, 1.5, c).astype(np.float32)
        bias = r.uniform(-0.1, 0.1, c).astype(np.float32)
        mu, var, sd = np.zeros(c), np.ones(c), np.ones(c)
        if x in self.val:
            v = self.val[x]
            mu, var = v.mean(axis=(0, 2, 3)), np.maximum(v.var(axis=(0, 2, 3)), 1e-4)
            sd = np.sqrt(var)
        run_mean = (mu + r.uniform(-0.1, 0.1, c) * sd).astype(np.float32)
        run_var = (var * r.uniform(0.5, 1.5, c)).astype(np.float32)
        y = self.node("BatchNormalization",
                      [x, self.init(f"{name}.scale", scale), self.init(f"{name}.bias", bias),
                       self.init(f"{name}.mean", run_mean), self.init(f"{name}.var", run_var)],
                      name=name, epsilon=1e-5)
        if x in self.val:
            sh = (1, c, 1, 1)
            self.val[y] = ((self.val[x] - run_mean.reshape(sh)) / np.sqrt(run_var.reshape(sh) + 1e-5)
                           * scale.reshape(sh) + bias.reshape(sh))
        return y

    def gemm(self, x: str, cin: int, cout: int, name: str = "fc") -> str:
        bound = 1.0 / math.sqrt(cin)
        w = self.rng.uniform(-bound, bound, (cout, cin)).astype(np.float32)
        b = self.rng.uniform(-bound, bound, cout).astype(np.float32)
        return self.node("Gemm", [x, self.init(f"{name}.weight", w), self.init(f"{name}.bias", b)], name=name,
                         transB=1)

    def linear(self, x: str, cin: int, cout: int, name: str) -> str:
        """MatMul by a [cin, cout] weight, then Add the bias (BERT's dense layers)."""
        w = (self.rng.standard_normal((cin, cout)) * 0.02).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.02).astype(np.float32)
        y = self.node("MatMul", [x, self.init(f"{name}.weight", w)], name=f"{name}.matmul")
        return self.node("Add", [y, self.init(f"{name}.bias", b)], name=f"{name}.add")

    def layer_norm(self, x: str, h: int, name: str) -> str:
        scale = (1.0 + self.rng.standard_normal(h) * 0.02).astype(np.float32)
        bias = (self.rng.standard_normal(h) * 0.02).astype(np.float32)
        return self.node("LayerNormalization", [x, self.init(f"{name}.scale", scale), self.init(f"{name}.bias", bias)],
                         name=name, axis=-1, epsilon=1e-12)


def _np_conv(x: np.ndarray, w: np.ndarray, stride: int, pad: int, group: int) -> np.ndarray:
    """NCHW convolution (square kernel, symmetric pads) in numpy, for the calibration pass."""
    cout, cin_g, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, hp, wp = xp.shape
    ho, wo = (hp - k) // stride + 1, (wp - k) // stride + 1
    if group == c and cin_g == 1 and cout == c:  # depthwise: accumulate the k*k taps
        out = np.zeros((n, c, ho, wo))
        for i in range(k):
            for j in range(k):
                out += xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] * w[:, 0, i, j].reshape(1, c, 1, 1)
        return out
    outs = []
    per = cout // group
    for g in range(group):
        xg = xp[:, g * cin_g:(g + 1) * cin_g]
        win = np.lib.stride_tricks.sliding_window_view(xg, (k, k), axis=(2, 3))
        win = win[:, :, ::stride, ::stride][:, :, :ho, :wo]
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, cin_g * k * k)
        y = cols @ w[g * per:(g + 1) * per].reshape(per, -1).T
        outs.append(y.reshape(n, ho, wo, per).transpose(0, 3, 1, 2))
    return np.concatenate(outs, axis=1)


# ---------------------------------------------------------------- ResNet

def _resnet(seed: int, name: str, image: int, stem: int, widths, blocks, classes: int) -> onnx.ModelProto:
    b = Builder(seed)
    b.val["input"] = b.rng.uniform(-1, 1, (1, 3, image, image))
    x = b.relu(b.bn(b.conv("input", 3, stem, 7, stride=2, name="conv1"), stem, name="bn1"), "relu1")
    x = b.max_pool(x, "maxpool")
    cin = stem
    for s, (width, n) in enumerate(zip(widths, blocks)):
        for i in range(n):
            stride = 2 if (i == 0 and s > 0) else 1
            cout = width * 4
            p = f"layer{s + 1}.{i}"
            y = b.relu(b.bn(b.conv(x, cin, width, 1, name=f"{p}.conv1"), width, name=f"{p}.bn1"), f"{p}.relu1")
            y = b.relu(b.bn(b.conv(y, width, width, 3, stride=stride, name=f"{p}.conv2"), width, name=f"{p}.bn2"),
                       f"{p}.relu2")
            y = b.bn(b.conv(y, width, cout, 1, name=f"{p}.conv3"), cout, name=f"{p}.bn3")
            if stride != 1 or cin != cout:
                shortcut = b.bn(b.conv(x, cin, cout, 1, stride=stride, name=f"{p}.downsample.conv"), cout,
                                name=f"{p}.downsample.bn")
            else:
                shortcut = x
            x = b.relu(b.add(y, shortcut, f"{p}.add"), f"{p}.relu3")
            cin = cout
    x = b.node("GlobalAveragePool", [x], name="avgpool")
    x = b.node("Flatten", [x], name="flatten", axis=1)
    b.node("Gemm", [x, b.init("fc.weight", (b.rng.uniform(-1, 1, (classes, cin)) / math.sqrt(cin)).astype(np.float32)),
                    b.init("fc.bias", (b.rng.uniform(-1, 1, classes) / math.sqrt(cin)).astype(np.float32))],
           name="logits", transB=1)
    return b.model(name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image, image])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
                   f"{name}: ResNet v1.5, random weights (seed {seed})")


def resnet50(seed: int) -> onnx.ModelProto:
    return _resnet(seed, "resnet50", 224, 64, [64, 128, 256, 512], [3, 4, 6, 3], 1000)


def resnet_small(seed: int) -> onnx.ModelProto:
    # The first stage has two bottlenecks (a projection shortcut, then an identity one), the
    # others one each with a stride-2 3x3 conv and a strided downsample branch: 32 -> 16 -> 8 -> 4 -> 2.
    return _resnet(seed, "resnet_small", 32, 8, [8, 16, 32], [2, 1, 1], 10)


# ---------------------------------------------------------------- MobileNet v2

def _mobilenet(seed: int, name: str, image: int, stem: int, settings, last: int, classes: int) -> onnx.ModelProto:
    b = Builder(seed)
    b.val["input"] = b.rng.uniform(-1, 1, (1, 3, image, image))
    lo, hi = b.const(0.0), b.const(6.0)

    def relu6(x: str, n: str) -> str:
        return b.relu(x, n, lo, hi)

    x = relu6(b.bn(b.conv("input", 3, stem, 3, stride=2, name="features.0.conv"), stem, name="features.0.bn"),
              "features.0.relu6")
    cin = stem
    idx = 1
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            p = f"features.{idx}"
            y = x
            if t != 1:
                y = relu6(b.bn(b.conv(y, cin, hidden, 1, name=f"{p}.expand"), hidden, name=f"{p}.expand_bn"),
                          f"{p}.expand_relu6")
            y = relu6(b.bn(b.conv(y, hidden, hidden, 3, stride=stride, group=hidden, name=f"{p}.dw"), hidden,
                           name=f"{p}.dw_bn"), f"{p}.dw_relu6")
            y = b.bn(b.conv(y, hidden, c, 1, name=f"{p}.project"), c, name=f"{p}.project_bn")
            if stride == 1 and cin == c:
                y = b.add(x, y, f"{p}.add")
            x = y
            cin = c
            idx += 1
    x = relu6(b.bn(b.conv(x, cin, last, 1, name=f"features.{idx}.conv"), last, name=f"features.{idx}.bn"),
              f"features.{idx}.relu6")
    x = b.node("GlobalAveragePool", [x], name="avgpool")
    x = b.node("Reshape", [x, b.const([1, -1], np.int64)], name="flatten")
    b.gemm(x, last, classes, name="logits")
    b.nodes[-1].output[0] = "logits"
    return b.model(name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image, image])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
                   f"{name}: MobileNet v2, random weights (seed {seed})")


MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]


def mobilenetv2(seed: int) -> onnx.ModelProto:
    return _mobilenet(seed, "mobilenetv2", 224, 32, MOBILENET_V2, 1280, 1000)


def mobilenet_small(seed: int) -> onnx.ModelProto:
    # t=1 block without expansion; a stride-2 block; then 12 -> 12 with a residual Add; then a
    # width change (no Add) and one more residual block. 32 -> 16 -> 8.
    return _mobilenet(seed, "mobilenet_small", 32, 16, [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 1)], 64, 10)


# ---------------------------------------------------------------- BERT

def _bert(seed: int, name: str, layers: int, hidden: int, heads: int, inter: int, seq: int, vocab: int,
          max_pos: int = 512) -> onnx.ModelProto:
    b = Builder(seed)
    r = b.rng
    d = hidden // heads
    word = b.init("embeddings.word", (r.standard_normal((vocab, hidden)) * 0.02).astype(np.float32))
    pos = b.init("embeddings.position", (r.standard_normal((max_pos, hidden)) * 0.02).astype(np.float32))
    tok = b.init("embeddings.token_type0", (r.standard_normal(hidden) * 0.02).astype(np.float32))
    pos_ids = b.init("embeddings.position_ids", np.arange(seq, dtype=np.int64).reshape(1, seq))
    x = b.node("Gather", [word, "input_ids"], name="embeddings.word_gather", axis=0)
    x = b.node("Add", [x, b.node("Gather", [pos, pos_ids], name="embeddings.position_gather", axis=0)],
               name="embeddings.add_position")
    x = b.node("Add", [x, tok], name="embeddings.add_token_type")
    x = b.layer_norm(x, hidden, "embeddings.layernorm")

    m = b.node("Cast", ["attention_mask"], name="mask.cast", to=TensorProto.FLOAT)
    m = b.node("Sub", [b.const(1.0), m], name="mask.invert")
    m = b.node("Mul", [m, b.const(-10000.0)], name="mask.scale")
    mask = b.node("Unsqueeze", [m, b.const([1, 2], np.int64)], name="mask.unsqueeze")  # [1, 1, 1, seq]

    heads_shape = b.const([1, seq, heads, d], np.int64)
    merged_shape = b.const([1, seq, hidden], np.int64)
    for i in range(layers):
        p = f"layer{i}"
        q = b.node("Transpose", [b.node("Reshape", [b.linear(x, hidden, hidden, f"{p}.query"), heads_shape],
                                        name=f"{p}.query.reshape")], name=f"{p}.query.transpose", perm=[0, 2, 1, 3])
        k = b.node("Transpose", [b.node("Reshape", [b.linear(x, hidden, hidden, f"{p}.key"), heads_shape],
                                        name=f"{p}.key.reshape")], name=f"{p}.key.transpose", perm=[0, 2, 3, 1])
        v = b.node("Transpose", [b.node("Reshape", [b.linear(x, hidden, hidden, f"{p}.value"), heads_shape],
                                        name=f"{p}.value.reshape")], name=f"{p}.value.transpose", perm=[0, 2, 1, 3])
        s = b.node("MatMul", [q, k], name=f"{p}.scores")
        s = b.node("Div", [s, b.const(math.sqrt(d))], name=f"{p}.scores.scale")
        s = b.node("Add", [s, mask], name=f"{p}.scores.mask")
        s = b.node("Softmax", [s], name=f"{p}.probs", axis=-1)
        c = b.node("MatMul", [s, v], name=f"{p}.context")
        c = b.node("Transpose", [c], name=f"{p}.context.transpose", perm=[0, 2, 1, 3])
        c = b.node("Reshape", [c, merged_shape], name=f"{p}.context.reshape")
        a = b.linear(c, hidden, hidden, f"{p}.attention.output")
        x = b.layer_norm(b.node("Add", [a, x], name=f"{p}.attention.residual"), hidden, f"{p}.attention.layernorm")
        h = b.linear(x, hidden, inter, f"{p}.intermediate")
        g = b.node("Erf", [b.node("Div", [h, b.const(math.sqrt(2.0))], name=f"{p}.gelu.div")], name=f"{p}.gelu.erf")
        g = b.node("Add", [g, b.const(1.0)], name=f"{p}.gelu.add")
        g = b.node("Mul", [h, g], name=f"{p}.gelu.mul")
        g = b.node("Mul", [g, b.const(0.5)], name=f"{p}.gelu.half")
        o = b.linear(g, inter, hidden, f"{p}.output")
        x = b.layer_norm(b.node("Add", [o, x], name=f"{p}.output.residual"), hidden, f"{p}.output.layernorm")
    b.nodes[-1].output[0] = "last_hidden_state"
    return b.model(name, [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq]),
                          helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, seq])],
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])],
                   f"{name}: BERT encoder ({layers} layers, hidden {hidden}, {heads} heads), random weights "
                   f"(seed {seed})")


def bert_base(seed: int) -> onnx.ModelProto:
    return _bert(seed, "bert_base", 12, 768, 12, 3072, 128, 30522)


def bert_small(seed: int) -> onnx.ModelProto:
    return _bert(seed, "bert_small", 2, 64, 4, 128, 16, 100, max_pos=64)


# ---------------------------------------------------------------- registry

# name: (builder, seed, description)
def _quantized(base: str) -> onnx.ModelProto:
    """`base` quantized to int8 by onnxruntime's own tools, as a user would: quant_pre_process
    (shape inference, BatchNormalization folded into the convolutions), then quantize_static in
    its default QDQ format, activations uint8 and weights int8 (symmetric), per tensor, calibrated
    (MinMax) on 8 inputs from fixed seeds 1000..1007. Needs onnxruntime."""
    import tempfile

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([example_inputs(base, seed=1000 + i) for i in range(8)])

        def get_next(self):
            return next(self.feeds, None)

    with tempfile.TemporaryDirectory() as d:
        f32, pre, out = (os.path.join(d, f) for f in ("f32.onnx", "pre.onnx", "int8.onnx"))
        onnx.save(build_model(base), f32)
        quant_pre_process(f32, pre)
        quantize_static(pre, out, Calibration(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        model = onnx.load(out)
    onnx.checker.check_model(model)
    return model


def _light(arch: str) -> onnx.ModelProto:
    """The model zoo's architecture `arch` as the onnx wheel ships it with light weights
    (onnx/backend/test/data/light: opset 9, its weights made by ConstantOfShape nodes)."""
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{arch}.onnx")
    return onnx.load(path)


LIGHT = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet",
         "vgg19", "zfnet512")

MODELS = {
    "resnet50": (resnet50, 50, "ResNet-50 v1.5, 1x3x224x224 -> 1000 logits"),
    "mobilenetv2": (mobilenetv2, 2, "MobileNet-v2 (width 1.0), 1x3x224x224 -> 1000 logits"),
    "bert_base": (bert_base, 768, "BERT-base encoder, 12 layers, hidden 768, seq 128"),
    "resnet_small": (resnet_small, 1050, "ResNet v1.5 bottlenecks, 1x3x32x32 -> 10 logits"),
    "mobilenet_small": (mobilenet_small, 1002, "MobileNet-v2 blocks, 1x3x32x32 -> 10 logits"),
    "bert_small": (bert_small, 1768, "BERT encoder, 2 layers, hidden 64, 4 heads, seq 16, vocab 100"),
    "resnet50_int8": (lambda seed: _quantized("resnet50"), 50, "resnet50 quantized by onnxruntime (QDQ, u8 x s8)"),
    "resnet_small_int8": (lambda seed: _quantized("resnet_small"), 1050, "resnet_small quantized by onnxruntime"),
    **{f"light_{a}": (lambda seed, a=a: _light(a), 0, f"the onnx wheel's light {a} (opset 9, 1x3x224x224)")
       for a in LIGHT},
}


def build_model(name: str) -> onnx.ModelProto:
    """The model `name` (one of MODELS), built from its fixed seed and checked by onnx.checker."""
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    fn, seed, _ = MODELS[name]
    return fn(seed)


def example_inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for model `name`: an image in [-1, 1) for the CNNs; for BERT, token ids in the
    vocabulary and an attention mask of ones with the last quarter zeros (padding)."""
    rng = np.random.default_rng(seed)
    if name.startswith("bert"):
        vocab, seq = (30522, 128) if name == "bert_base" else (100, 16)
        mask = np.ones((1, seq), dtype=np.int64)
        mask[:, seq - seq // 4:] = 0
        return {"input_ids": rng.integers(0, vocab, (1, seq), dtype=np.int64), "attention_mask": mask}
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}'")
    if name.startswith("light_"):  # its one input, in [-1, 1)
        (vi,) = [i for i in build_model(name).graph.input if i.name not in
                 {t.name for t in build_model(name).graph.initializer}]
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        return {vi.name: rng.uniform(-1, 1, shape).astype(np.float32)}
    name = name.removesuffix("_int8")  # a quantized model takes its float model's input
    size = 224 if name in ("resnet50", "mobilenetv2") else 32
    return {"input": rng.uniform(-1, 1, (1, 3, size, size)).astype(np.float32)}


def count_params(model: onnx.ModelProto) -> int:
    """Elements of the floating-point initializers (shape and axis constants are not parameters)."""
    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
    return sum(int(np.prod(t.dims, dtype=np.int64)) for t in model.graph.initializer if t.data_type in floats)


def _check(path: str, name: str) -> str:
    try:
        import onnxruntime as ort
    except ImportError:
        return "  (onnxruntime not installed: not run)"
    t = time.perf_counter()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t) * 1e3
    feeds = example_inputs(name)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        outs = sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    lines = [f"  ort: session {load_ms:.1f} ms, first run {times[0]:.2f} ms, median of 5 {sorted(times)[2]:.2f} ms"]
    for o, v in zip(sess.get_outputs(), outs):
        lines.append(f"  {o.name} {list(v.shape)} finite={bool(np.isfinite(v).all())} "
                     f"mean={v.mean():.4g} std={v.std():.4g} absmax={np.abs(v).max():.4g}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="directory the .onnx files go to (created if missing)")
    ap.add_argument("--models", help="comma-separated names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--check", action="store_true", help="run each model once in onnxruntime and print stats")
    args = ap.parse_args(argv)
    if args.list:
        for n, (_, seed, desc) in MODELS.items():
            print(f"{n:16s} seed {seed:5d}  {desc}")
        return 0
    if not args.out:
        ap.error("--out DIR is required (unless --list)")
    # the quantized ones need onnxruntime; the light ones are the onnx wheel's files
    default = [n for n in MODELS if not n.endswith("_int8") and not n.startswith("light_")]
    names = [n.strip() for n in args.models.split(",") if n.strip()] if args.models else default
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)} (known: {', '.join(MODELS)})")
    os.makedirs(args.out, exist_ok=True)
    for n in names:
        model = build_model(n)
        path = os.path.join(args.out, f"{n}.onnx")
        onnx.save(model, path)
        print(f"{n} {path} nodes={len(model.graph.node)} params={count_params(model)}", flush=True)
        if args.check:
            print(_check(path, n), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
