"""Where onnxruntime's quantized results are not ONNX's.

onnxruntime's u8 x s8 integer kernels on x86 CPUs without VNNI (AVX2 only, such as AMD Zen 3) add
pairs of 8-bit products in 16 bits (vpmaddubsw), which saturates: MatMulInteger, QLinearMatMul,
QLinearConv and the QDQ patterns it fuses into them then differ from the exact result (by
thousands on an int32 output). Tyche's products are exact on every CPU, so on such hosts a
quantized model's reference is onnx's ReferenceEvaluator, which computes in numpy exactly.
"""

from __future__ import annotations

import pathlib
import platform

import numpy as np

QUANTIZED_OPS = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv", "QuantizeLinear", "DequantizeLinear"}


def ort_saturates_u8s8() -> bool:
    """An x86 host without AVX512-VNNI or AVX-VNNI (Linux's /proc/cpuinfo flags)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        return False
    flags = set()
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    return not ({"avx512_vnni", "avx_vnni"} & flags)


def is_quantized(model) -> bool:
    return any(node.op_type in QUANTIZED_OPS for node in model.graph.node)


def exact_outputs(model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every graph output by onnx's ReferenceEvaluator (the model raised to opset 21 when its
    opset's quantization ops have no reference implementation)."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    names = [o.name for o in model.graph.output]
    try:
        values = ReferenceEvaluator(model).run(names, inputs)
    except Exception:  # an op version the evaluator lacks: the same graph at a newer opset
        values = ReferenceEvaluator(onnx.version_converter.convert_version(model, 21)).run(names, inputs)
    return dict(zip(names, values))


def reference_outputs(model, inputs: dict[str, np.ndarray], ort_outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's outputs, or the exact ones where its u8 x s8 kernels saturate."""
    if ort_saturates_u8s8() and is_quantized(model):
        return exact_outputs(model, inputs)
    return ort_outputs
