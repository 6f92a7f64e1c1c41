"""Op-level ONNX models for checking Tyche's importer and graph executor against onnxruntime
(test_onnx_ops.py runs them).

CASES is a list of (id, onnx.ModelProto, {input name: numpy array}): small graphs built with
onnx.helper, opset 17 unless the case is about another opset (Reduce* with axes as an input and
Split with num_outputs at 18 and 21, Gelu at 20; models of opsets 7 to 12 that import upgrades,
and of 22 to 28); ir_version 8 up to opset 17, 9 for 18 to 20, 10 from 21. Weights, shapes, axes and other parameters are initializers (constant);
activations are graph inputs. Input data is float32 in [-1, 1) from one fixed seed (positive, or
away from 0, where the op needs it); shapes are odd on purpose, with broadcasting from both sides,
negative axes and asymmetric pads. Names use only [A-Za-z0-9_].

Besides CASES, the models of the error tests: unsupported_ops_model(), symbolic_dim_model() and
pixels_model() (a valid model whose input has a distinctive name).

Importing this module needs onnx and numpy only (not onnxruntime). `python3 onnx_cases.py` runs
every case in onnxruntime and prints each output's shape and range (a check of the cases
themselves).
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.uint32): TensorProto.UINT32,
         np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
         np.dtype(np.int32): TensorProto.INT32}

CASES: list[tuple[str, onnx.ModelProto, dict[str, np.ndarray]]] = []

_rng = np.random.default_rng(20240917)


def ir_version_for(opset: int) -> int:
    return 8 if opset <= 17 else 9 if opset <= 20 else 10


# ---- data ----

def U(*shape) -> np.ndarray:
    """float32 in [-1, 1)."""
    return _rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def P(*shape, lo=0.5, hi=1.5) -> np.ndarray:
    """float32 in [lo, hi) (positive)."""
    return _rng.uniform(lo, hi, shape).astype(np.float32)


def A(*shape) -> np.ndarray:
    """float32 away from 0: +-[0.5, 1.5)."""
    return (P(*shape) * np.where(_rng.random(shape) < 0.5, -1.0, 1.0)).astype(np.float32)


def I64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def F(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)


def N(op: str, inputs: list[str], outputs: list[str] | str = "y", **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [outputs] if isinstance(outputs, str) else outputs, **attrs)


# ---- model construction ----

def make_model(name: str, nodes, inputs: dict[str, np.ndarray], outputs, inits: dict[str, np.ndarray] | None = None,
               opset: int = 17, input_shapes: dict[str, list] | None = None) -> onnx.ModelProto:
    """A checked model: graph inputs typed and shaped from `inputs` (or `input_shapes`, which may
    hold symbolic dims), initializers from `inits`, outputs `outputs` (names, float32, or
    (name, numpy dtype) pairs) with shapes from ONNX shape inference (data propagation on, so
    Shape-driven Reshapes get static shapes)."""
    input_shapes = input_shapes or {}
    vin = [helper.make_tensor_value_info(k, _ELEM[v.dtype], input_shapes.get(k, list(v.shape)))
           for k, v in inputs.items()]
    outs = [(o, np.float32) if isinstance(o, str) else o for o in outputs]
    # (name, dtype, shape) where shape inference gives none (a Loop's carried values)
    vout = [helper.make_tensor_value_info(o[0], _ELEM[np.dtype(o[1])], o[2] if len(o) > 2 else None) for o in outs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(list(nodes), name, vin, vout, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tyche-onnx-cases")
    model.ir_version = ir_version_for(opset)
    inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for vo in model.graph.output:
        vi = known.get(vo.name)
        if vi is not None and vi.type.tensor_type.HasField("shape"):
            vo.type.tensor_type.shape.CopyFrom(vi.type.tensor_type.shape)
    onnx.checker.check_model(model, full_check=True)
    return model


def case(case_id: str, nodes, inputs: dict[str, np.ndarray], outputs=("y",), inits=None, opset: int = 17):
    assert case_id.replace("_", "").isalnum() and case_id not in {c[0] for c in CASES}, case_id
    CASES.append((case_id, make_model(case_id, nodes, inputs, outputs, inits, opset), inputs))


def unary(case_id: str, op: str, x: np.ndarray, opset: int = 17, scale: float | None = None, **attrs):
    """One `op` node on input x (first multiplied by a constant `scale` when given, to reach the
    op's interesting range)."""
    if scale is None:
        case(case_id, [N(op, ["x"], **attrs)], {"x": x}, opset=opset)
    else:
        case(case_id, [N("Mul", ["x", "s"], "xs"), N(op, ["xs"], **attrs)], {"x": x}, inits={"s": F(scale)},
             opset=opset)


def binary(case_id: str, op: str, a: np.ndarray, b: np.ndarray, const_b: bool = False):
    if const_b:
        case(case_id, [N(op, ["a", "b"])], {"a": a}, inits={"b": b})
    else:
        case(case_id, [N(op, ["a", "b"])], {"a": a, "b": b})


# ================================================================ Conv

def conv(case_id, x, w, b=None, **attrs):
    inits = {"w": w} if b is None else {"w": w, "b": b}
    case(case_id, [N("Conv", ["x", "w"] + ([] if b is None else ["b"]), **attrs)], {"x": x}, inits=inits)


conv("conv_3x3_bias_pad1", U(1, 5, 7, 9), U(4, 5, 3, 3), U(4), pads=[1, 1, 1, 1])
conv("conv_3x3_nobias_stride2_batch2", U(2, 3, 9, 11), U(6, 3, 3, 3), strides=[2, 2])
conv("conv_1x1", U(1, 8, 5, 7), U(16, 8, 1, 1), U(16), kernel_shape=[1, 1])
conv("conv_1x1_stride2_nobias", U(1, 6, 7, 9), U(5, 6, 1, 1), strides=[2, 2])
conv("conv_groups2", U(1, 6, 7, 9), U(4, 3, 3, 3), U(4), group=2, pads=[1, 1, 1, 1])
conv("conv_groups3_nobias", U(1, 9, 6, 5), U(6, 3, 2, 2), group=3)
conv("conv_depthwise", U(1, 8, 9, 7), U(8, 1, 3, 3), U(8), group=8, pads=[1, 1, 1, 1])
conv("conv_depthwise_stride2_multiplier2", U(1, 4, 9, 10), U(8, 1, 3, 3), group=4, strides=[2, 2],
     pads=[1, 1, 1, 1])
conv("conv_depthwise_5x5_nobias", U(1, 6, 11, 8), U(6, 1, 5, 5), group=6, pads=[2, 2, 2, 2])
conv("conv_dilation2", U(1, 3, 11, 10), U(4, 3, 3, 3), U(4), dilations=[2, 2], pads=[2, 2, 2, 2])
conv("conv_dilation_2x3_stride2", U(1, 2, 13, 12), U(3, 2, 3, 3), dilations=[2, 3], strides=[2, 1])
conv("conv_asymmetric_pads", U(1, 3, 7, 9), U(4, 3, 3, 3), U(4), pads=[1, 0, 2, 1])
conv("conv_same_upper_stride2", U(1, 3, 8, 9), U(4, 3, 3, 3), U(4), auto_pad="SAME_UPPER", strides=[2, 2])
conv("conv_same_lower_stride2", U(1, 3, 8, 9), U(4, 3, 3, 3), U(4), auto_pad="SAME_LOWER", strides=[2, 2])
conv("conv_same_upper_even_kernel", U(1, 2, 6, 7), U(3, 2, 2, 4), auto_pad="SAME_UPPER")
conv("conv_same_lower_even_kernel", U(1, 2, 6, 7), U(3, 2, 2, 4), auto_pad="SAME_LOWER")
conv("conv_valid_5x3", U(1, 4, 9, 7), U(5, 4, 5, 3), U(5), auto_pad="VALID")
conv("conv_rect_stride_2x1", U(1, 3, 10, 9), U(4, 3, 1, 3), U(4), strides=[2, 1], pads=[0, 1, 0, 1])
conv("conv_7x7_stride2_pad3", U(1, 3, 19, 17), U(8, 3, 7, 7), strides=[2, 2], pads=[3, 3, 3, 3])

# ================================================================ ConvTranspose

def convt(case_id, x, w, b=None, **attrs):
    inits = {"w": w} if b is None else {"w": w, "b": b}
    case(case_id, [N("ConvTranspose", ["x", "w"] + ([] if b is None else ["b"]), **attrs)], {"x": x}, inits=inits)


convt("convtranspose_stride2_bias", U(1, 4, 5, 6), U(4, 3, 3, 3), U(3), strides=[2, 2])
convt("convtranspose_stride2_pads_output_padding", U(1, 4, 5, 6), U(4, 3, 3, 3), U(3), strides=[2, 2],
      pads=[1, 1, 1, 1], output_padding=[1, 1])
convt("convtranspose_groups2", U(1, 4, 5, 5), U(4, 3, 3, 3), U(6), group=2, strides=[2, 2], pads=[1, 0, 1, 0])
convt("convtranspose_k2_stride1_nobias", U(2, 3, 4, 5), U(3, 2, 2, 2))
convt("convtranspose_k4_stride2_pad1", U(1, 3, 4, 7), U(3, 2, 4, 4), U(2), strides=[2, 2], pads=[1, 1, 1, 1])

# ================================================================ BatchNormalization


def bn_params(c):
    return {"scale": P(c), "bias": U(c), "mean": U(c) * 0.5, "var": P(c)}


case("batchnorm", [N("BatchNormalization", ["x", "scale", "bias", "mean", "var"], epsilon=1e-3)],
     {"x": U(1, 5, 7, 9)}, inits=bn_params(5))
case("batchnorm_batch2", [N("BatchNormalization", ["x", "scale", "bias", "mean", "var"])],
     {"x": U(2, 3, 4, 5)}, inits=bn_params(3))
case("conv_batchnorm", [N("Conv", ["x", "w"], "c", pads=[1, 1, 1, 1]),
                        N("BatchNormalization", ["c", "scale", "bias", "mean", "var"])],
     {"x": U(1, 3, 7, 9)}, inits={"w": U(6, 3, 3, 3), **bn_params(6)})
case("conv_bias_batchnorm_relu", [N("Conv", ["x", "w", "b"], "c", strides=[2, 2]),
                                  N("BatchNormalization", ["c", "scale", "bias", "mean", "var"], "n", epsilon=1e-3),
                                  N("Relu", ["n"])],
     {"x": U(1, 4, 9, 8)}, inits={"w": U(5, 4, 3, 3), "b": U(5), **bn_params(5)})
case("depthwise_conv_batchnorm", [N("Conv", ["x", "w"], "c", group=6, pads=[1, 1, 1, 1]),
                                  N("BatchNormalization", ["c", "scale", "bias", "mean", "var"])],
     {"x": U(1, 6, 5, 7)}, inits={"w": U(6, 1, 3, 3), **bn_params(6)})

# ================================================================ activations

unary("relu", "Relu", U(2, 3, 5, 7))
unary("relu_1d", "Relu", U(37))
unary("leaky_relu", "LeakyRelu", U(3, 1, 4), alpha=0.2)
unary("leaky_relu_default_alpha", "LeakyRelu", U(2, 9))
unary("sigmoid", "Sigmoid", U(2, 3, 5, 7), scale=6.0)
unary("tanh", "Tanh", U(3, 5, 7), scale=3.0)
unary("erf", "Erf", U(4, 33), scale=3.0)
unary("hard_swish", "HardSwish", U(2, 5, 7), scale=4.0)
unary("gelu_none_opset20", "Gelu", U(3, 5, 7), opset=20, scale=3.0)
unary("gelu_tanh_opset20", "Gelu", U(3, 5, 7), opset=20, scale=3.0, approximate="tanh")
unary("exp", "Exp", U(3, 1, 4), scale=3.0)
unary("neg", "Neg", U(5, 7))
unary("sqrt", "Sqrt", P(3, 5, 7, lo=0.01, hi=4.0))
unary("reciprocal", "Reciprocal", A(4, 9))
unary("identity", "Identity", U(3, 1, 4))
unary("dropout_inference", "Dropout", U(2, 3, 5))
case("dropout_ratio_input", [N("Dropout", ["x", "ratio"])], {"x": U(4, 6)}, inits={"ratio": F(0.3)})

case("clip_min_max", [N("Clip", ["x", "lo", "hi"])], {"x": U(3, 5, 7)}, inits={"lo": F(-0.5), "hi": F(0.25)})
case("clip_min_only", [N("Clip", ["x", "lo"])], {"x": U(3, 5, 7)}, inits={"lo": F(-0.2)})
case("clip_max_only", [N("Clip", ["x", "", "hi"])], {"x": U(3, 5, 7)}, inits={"hi": F(0.3)})
case("clip_relu6", [N("Mul", ["x", "s"], "xs"), N("Clip", ["xs", "lo", "hi"])], {"x": U(2, 4, 5, 5)},
     inits={"s": F(8.0), "lo": F(0.0), "hi": F(6.0)})
case("clip_no_bounds", [N("Clip", ["x"])], {"x": U(2, 7)})

# ================================================================ elementwise binary, broadcasting

binary("add_same_shape", "Add", U(2, 3, 4), U(2, 3, 4))
binary("add_rank_mismatch", "Add", U(2, 3, 4, 5), U(5))
binary("add_size1_both_sides", "Add", U(3, 1, 4), U(1, 5, 1))
binary("add_channel_bias_const", "Add", U(1, 5, 7, 9), U(5, 1, 1), const_b=True)
binary("add_scalar_const", "Add", U(3, 5), F(0.75), const_b=True)
binary("add_rank_mismatch_left_smaller", "Add", U(4, 1), U(2, 3, 1, 5))
binary("sub_size1_both_sides", "Sub", U(4, 1), U(1, 3))
binary("sub_rank_mismatch", "Sub", U(2, 1, 3), U(5, 1))
case("sub_scalar_minus_tensor", [N("Sub", ["one", "x"])], {"x": U(2, 5)}, inits={"one": F(1.0)})
binary("mul_size1_both_sides", "Mul", U(2, 1, 4, 1), U(3, 1, 5))
binary("mul_const_vector", "Mul", U(3, 5, 4), U(4), const_b=True)
binary("div_broadcast", "Div", U(3, 4, 5), A(4, 1))
binary("div_const_scalar", "Div", U(6, 7), F(2.5), const_b=True)
binary("div_rank_mismatch", "Div", U(5), A(3, 1, 5))
binary("pow_exponent_2", "Pow", U(3, 5, 7), F(2.0), const_b=True)
binary("pow_exponent_half", "Pow", P(3, 5, 7, lo=0.01, hi=2.0), F(0.5), const_b=True)
binary("pow_tensor_exponent", "Pow", P(3, 4, lo=0.2, hi=2.0), U(4) * 2)
binary("pow_tensor_exponent_broadcast", "Pow", P(2, 1, 5, lo=0.2, hi=2.0), U(3, 1))
case("add_same_input_twice", [N("Add", ["x", "x"])], {"x": U(3, 4)})
case("elementwise_chain", [N("Mul", ["a", "b"], "m"), N("Sub", ["m", "c"], "s"), N("Exp", ["s"], "e"),
                           N("Div", ["e", "d"], "q"), N("Neg", ["q"])],
     {"a": U(2, 3, 4), "b": U(3, 1), "d": A(4)}, inits={"c": U(1, 4)})

# ================================================================ MatMul, Gemm

binary("matmul_2d", "MatMul", U(5, 7), U(7, 3))
binary("matmul_2d_const_weight", "MatMul", U(5, 7), U(7, 9), const_b=True)
binary("matmul_batched_3d", "MatMul", U(3, 5, 7), U(3, 7, 4))
binary("matmul_batch_broadcast_3d", "MatMul", U(1, 5, 7), U(3, 7, 4))
binary("matmul_4d_2d_const", "MatMul", U(2, 3, 5, 7), U(7, 6), const_b=True)
binary("matmul_4d_batch_broadcast", "MatMul", U(2, 1, 5, 7), U(1, 3, 7, 4))
binary("matmul_1d_2d", "MatMul", U(7), U(7, 4))
binary("matmul_large_k", "MatMul", U(3, 257), U(257, 17), const_b=True)


def gemm(case_id, a, b, c=None, **attrs):
    inits = {"b": b} if c is None else {"b": b, "c": c}
    case(case_id, [N("Gemm", ["a", "b"] + ([] if c is None else ["c"]), **attrs)], {"a": a}, inits=inits)


gemm("gemm_c_row", U(4, 6), U(6, 5), U(5))
gemm("gemm_transB_c_row_2d", U(3, 8), U(10, 8), U(1, 10), transB=1)
gemm("gemm_transA", U(6, 4), U(6, 5), U(4, 5), transA=1)
gemm("gemm_alpha_beta_c_scalar", U(4, 6), U(6, 5), F(0.7), alpha=0.5, beta=2.0)
gemm("gemm_transA_transB_no_c", U(6, 4), U(5, 6), transA=1, transB=1)
gemm("gemm_c_column", U(4, 6), U(6, 5), U(4, 1), beta=0.5)
gemm("gemm_c_scalar_1elem", U(2, 3), U(5, 3), U(1), transB=1)

# ================================================================ Softmax, LayerNormalization

unary("softmax_axis_last", "Softmax", U(2, 3, 7), axis=-1, scale=4.0)
unary("softmax_axis1_3d", "Softmax", U(2, 5, 3), axis=1, scale=4.0)
unary("softmax_default_axis_2d", "Softmax", U(4, 10), scale=8.0)
unary("softmax_axis0", "Softmax", U(3, 4), axis=0)

case("layernorm_last_bias", [N("LayerNormalization", ["x", "g", "b"], axis=-1)], {"x": U(2, 5, 8)},
     inits={"g": P(8), "b": U(8)})
case("layernorm_last_nobias_eps", [N("LayerNormalization", ["x", "g"], axis=-1, epsilon=1e-3)], {"x": U(3, 7)},
     inits={"g": P(7)})
case("layernorm_axis_m2_bias", [N("LayerNormalization", ["x", "g", "b"], axis=-2)], {"x": U(2, 3, 4, 5)},
     inits={"g": P(4, 5), "b": U(4, 5)})
case("layernorm_axis_m2_nobias", [N("LayerNormalization", ["x", "g"], axis=-2, epsilon=1e-2)], {"x": U(3, 6, 5)},
     inits={"g": P(6, 5)})
case("layernorm_axis1_of_3", [N("LayerNormalization", ["x", "g", "b"], axis=1, epsilon=1e-6)], {"x": U(2, 3, 9)},
     inits={"g": P(3, 9), "b": U(3, 9)})

# ================================================================ reductions

# opset 17: ReduceMean/ReduceMax take axes as an attribute, ReduceSum (since 13) as an input.
unary("reduce_mean_last_keep", "ReduceMean", U(2, 3, 5), axes=[-1], keepdims=1)
unary("reduce_mean_two_axes_nokeep", "ReduceMean", U(2, 3, 4, 5), axes=[1, 3], keepdims=0)
unary("reduce_mean_all_nokeep", "ReduceMean", U(3, 4, 5), keepdims=0)
unary("reduce_mean_all_keep", "ReduceMean", U(3, 1, 5))
unary("reduce_mean_spatial_keep", "ReduceMean", U(1, 6, 5, 7), axes=[2, 3])
unary("reduce_max_neg_axes_nokeep", "ReduceMax", U(2, 3, 4, 5), axes=[-1, -3], keepdims=0)
unary("reduce_max_all_keep", "ReduceMax", U(3, 4, 5), keepdims=1)
unary("reduce_max_axis0", "ReduceMax", U(5, 6), axes=[0])
case("reduce_sum_axes_input_keep", [N("ReduceSum", ["x", "axes"], keepdims=1)], {"x": U(2, 3, 5)},
     inits={"axes": I64([-2])})
case("reduce_sum_two_axes_nokeep", [N("ReduceSum", ["x", "axes"], keepdims=0)], {"x": U(2, 3, 4, 5)},
     inits={"axes": I64([0, 2])})
case("reduce_sum_all_no_axes", [N("ReduceSum", ["x"], keepdims=1)], {"x": U(3, 4, 5)})
case("reduce_sum_all_nokeep", [N("ReduceSum", ["x"], keepdims=0)], {"x": U(7, 3)})
# opset 18: ReduceMean/ReduceMax take axes as an input too.
case("reduce_mean_axes_input_opset18", [N("ReduceMean", ["x", "axes"], keepdims=0)], {"x": U(2, 3, 5)},
     inits={"axes": I64([-1])}, opset=18)
case("reduce_max_axes_input_opset18", [N("ReduceMax", ["x", "axes"])], {"x": U(2, 3, 5, 4)},
     inits={"axes": I64([1, -1])}, opset=18)
case("reduce_sum_opset18", [N("ReduceSum", ["x", "axes"], keepdims=0)], {"x": U(4, 3, 2)},
     inits={"axes": I64([-3])}, opset=18)
case("reduce_mean_no_axes_opset18", [N("ReduceMean", ["x"])], {"x": U(3, 5)}, opset=18)
# opset 21
case("reduce_mean_opset21", [N("ReduceMean", ["x", "axes"], keepdims=1)], {"x": U(2, 3, 4)},
     inits={"axes": I64([0, -1])}, opset=21)
case("reduce_max_opset21", [N("ReduceMax", ["x", "axes"], keepdims=0)], {"x": U(3, 7)},
     inits={"axes": I64([1])}, opset=21)
case("reduce_sum_opset21", [N("ReduceSum", ["x", "axes"], keepdims=1)], {"x": U(2, 5, 3)},
     inits={"axes": I64([-2])}, opset=21)

# ================================================================ opsets outside 13..21
# Older models are upgraded to opset 13 by ONNX's version converter: attributes that became inputs
# (Unsqueeze's axes, Split's sizes, Clip's bounds), Softmax's flattening from `axis`, BatchNormalization
# and Gemm of opsets 7 and 9.
case("softmax_axis1_opset11", [N("Softmax", ["x"], axis=1)], {"x": U(2, 3, 4)}, opset=11)
case("unsqueeze_split_opset11", [N("Unsqueeze", ["x"], "u", axes=[0]), N("Split", ["u"], ["a", "y"], axis=2, split=[2, 3])],
     {"x": U(3, 5)}, outputs=("a", "y"), opset=11)
case("clip_attributes_opset7", [N("Clip", ["x"], min=-0.25, max=0.5)], {"x": U(4, 5)}, opset=7)
case("batchnorm_gemm_opset9", [N("BatchNormalization", ["x", "s", "b", "m", "v"], "n"), N("Flatten", ["n"], "f"),
                               N("Gemm", ["f", "w", "c"], transB=1)],
     {"x": U(2, 3, 2, 2)}, inits={"s": U(3), "b": U(3), "m": U(3), "v": P(3), "w": U(4, 12), "c": U(4)}, opset=9)
case("maxpool_relu_opset10", [N("MaxPool", ["x"], "p", kernel_shape=[2, 2], strides=[2, 2]), N("Relu", ["p"])],
     {"x": U(1, 2, 6, 6)}, opset=10)
# Newer opsets: each op read at its own newest version (most of 22..28 only allow more types).
case("conv_relu_opset22", [N("Conv", ["x", "w"], "c", pads=[1, 1, 1, 1]), N("Relu", ["c"])], {"x": U(1, 3, 6, 6)},
     inits={"w": U(4, 3, 3, 3)}, opset=22)
case("flatten_transpose_opset25", [N("Transpose", ["x"], "t", perm=[0, 2, 1]), N("Flatten", ["t"], "f", axis=1),
                                   N("Cast", ["f"], to=onnx.TensorProto.FLOAT)], {"x": U(2, 3, 4)}, opset=25)
case("reshape_squeeze_opset28", [N("Reshape", ["x", "shape"], "r"), N("Squeeze", ["r", "axes"])], {"x": U(2, 6)},
     inits={"shape": I64([2, 1, 6]), "axes": I64([1])}, opset=28)

# ================================================================ more elementwise, logic, variadic and reductions
# Several ops a case (one output each) keeps the file fast.
case("activations_opset18",
     [N("Mul", ["x", "three"], "x3"), N("Abs", ["x"], "abs"), N("Sign", ["x"], "sign"), N("Floor", ["x3"], "floor"), N("Ceil", ["x3"], "ceil"),
      N("Round", ["x3"], "round"), N("Log", ["p"], "log"), N("Elu", ["x"], "elu", alpha=0.7),
      N("Celu", ["x"], "celu", alpha=1.3), N("Selu", ["x"], "selu"), N("Softplus", ["x3"], "softplus"),
      N("Softsign", ["x"], "softsign"), N("Mish", ["x3"], "mish"), N("HardSigmoid", ["x3"], "hard_sigmoid", alpha=0.3),
      N("ThresholdedRelu", ["x"], "thresholded_relu", alpha=0.2), N("Shrink", ["x"], "shrink", bias=0.1, lambd=0.3),
      N("PRelu", ["x", "slope"], "prelu")],
     {"x": U(2, 3, 5), "p": P(2, 3, 5)},
     outputs=("abs", "sign", "floor", "ceil", "round", "log", "elu", "celu", "selu", "softplus", "softsign", "mish",
              "hard_sigmoid", "thresholded_relu", "shrink", "prelu"),
     inits={"slope": U(3, 1), "three": F(3.0)}, opset=18)
case("compare_logic_opset16",
     [N("Less", ["a", "b"], "lt"), N("LessOrEqual", ["a", "b"], "le"), N("Greater", ["a", "b"], "gt"),
      N("GreaterOrEqual", ["a", "b"], "ge"), N("Equal", ["ai", "bi"], "eq"), N("And", ["lt", "eq"], "and_"),
      N("Or", ["lt", "eq"], "or_"), N("Xor", ["gt", "le"], "xor_"), N("Not", ["gt"], "not_"),
      N("IsNaN", ["a"], "isnan"), N("IsInf", ["a"], "isinf", detect_negative=0), N("Mod", ["ai", "bi"], "mod"),
      N("Mod", ["a", "b"], "fmod", fmod=1)],
     {"a": U(3, 4), "b": U(4), "ai": np.arange(-6, 6, dtype=np.int64).reshape(3, 4), "bi": np.array([3, -4, 5, 2], np.int64)},
     outputs=(("lt", np.bool_), ("le", np.bool_), ("gt", np.bool_), ("ge", np.bool_), ("eq", np.bool_),
              ("and_", np.bool_), ("or_", np.bool_), ("xor_", np.bool_), ("not_", np.bool_), ("isnan", np.bool_),
              ("isinf", np.bool_), ("mod", np.int64), "fmod"), opset=16)
case("variadic_opset15",
     [N("Max", ["a", "b", "c"], "max"), N("Min", ["a", "b"], "min"), N("Sum", ["a", "b", "c"], "sum"),
      N("Mean", ["a", "c"], "mean"), N("CastLike", ["a", "like"], "castlike")],
     {"a": U(2, 3, 4), "b": U(3, 1), "c": U(4)}, outputs=("max", "min", "sum", "mean", ("castlike", np.int64)),
     inits={"like": I64([1])}, opset=15)
case("reductions_opset18",
     [N("ReduceMin", ["x", "ax"], "rmin"), N("ReduceProd", ["p", "ax"], "rprod", keepdims=0),
      N("ReduceL1", ["x", "ax"], "rl1"), N("ReduceL2", ["x", "ax2"], "rl2", keepdims=0),
      N("ReduceSumSquare", ["x"], "rss"), N("ReduceLogSum", ["p", "ax"], "rls"),
      N("ReduceLogSumExp", ["x", "ax2"], "rlse"), N("LogSoftmax", ["x"], "lsm", axis=1),
      N("ReduceMean", ["xi", "ax"], "rmeani", keepdims=0)],
     {"x": U(3, 4, 5), "p": P(3, 4, 5), "xi": np.arange(60, dtype=np.int64).reshape(3, 4, 5)},
     outputs=("rmin", "rprod", "rl1", "rl2", "rss", "rls", "rlse", "lsm", ("rmeani", np.int64)),
     inits={"ax": I64([1]), "ax2": I64([0, -1])}, opset=18)
case("shape_ops_opset13",
     [N("Shape", ["x"], "s"), N("ConstantOfShape", ["s"], "zeros",
                                value=numpy_helper.from_array(np.array([0.5], np.float32))),
      N("Add", ["x", "zeros"], "y"), N("Size", ["x"], "n"), N("Range", ["r0", "r1", "r2"], "r")],
     {"x": U(2, 3)}, outputs=("y", ("n", np.int64), "r"),
     inits={"r0": F(1.0), "r1": F(4.0), "r2": F(0.75)}, opset=13)

# ================================================================ pooling

unary("maxpool_3x3_stride2_pad1", "MaxPool", U(1, 4, 9, 11), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
unary("maxpool_2x2_stride2", "MaxPool", U(1, 3, 8, 8), kernel_shape=[2, 2], strides=[2, 2])
unary("maxpool_ceil0", "MaxPool", U(1, 2, 8, 8), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=0)
unary("maxpool_ceil1", "MaxPool", U(1, 2, 8, 8), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
unary("maxpool_ceil1_pads", "MaxPool", U(2, 3, 9, 10), kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 0],
      ceil_mode=1)
unary("maxpool_asymmetric_pads", "MaxPool", U(1, 3, 7, 6), kernel_shape=[3, 3], pads=[0, 1, 2, 1])
unary("maxpool_rect_stride", "MaxPool", U(1, 2, 7, 9), kernel_shape=[2, 3], strides=[1, 2], dilations=[1, 1])
unary("avgpool_count_include_pad0", "AveragePool", U(1, 3, 7, 9), kernel_shape=[3, 3], strides=[2, 2],
      pads=[1, 1, 1, 1], count_include_pad=0)
unary("avgpool_count_include_pad1", "AveragePool", U(1, 3, 7, 9), kernel_shape=[3, 3], strides=[2, 2],
      pads=[1, 1, 1, 1], count_include_pad=1)
unary("avgpool_2x2_stride2_nopad", "AveragePool", U(2, 3, 6, 8), kernel_shape=[2, 2], strides=[2, 2])
unary("avgpool_asymmetric_pads", "AveragePool", U(1, 2, 5, 7), kernel_shape=[3, 2], pads=[0, 1, 1, 0])
unary("global_avgpool", "GlobalAveragePool", U(1, 5, 7, 9))
unary("global_avgpool_batch2", "GlobalAveragePool", U(2, 3, 4, 4))

# ================================================================ layout: Transpose, Reshape, Flatten, (Un)Squeeze

unary("transpose_default_perm", "Transpose", U(2, 3, 4))
unary("transpose_nchw_to_nhwc", "Transpose", U(1, 5, 7, 9), perm=[0, 2, 3, 1])
unary("transpose_heads", "Transpose", U(1, 6, 4, 8), perm=[0, 2, 1, 3])
unary("transpose_2d", "Transpose", U(5, 9), perm=[1, 0])
unary("transpose_3d_rotate", "Transpose", U(3, 4, 5), perm=[2, 0, 1])


def reshape(case_id, x, shape, opset=17):
    case(case_id, [N("Reshape", ["x", "shape"])], {"x": x}, inits={"shape": I64(shape)}, opset=opset)


reshape("reshape_zero_and_minus1", U(2, 3, 4, 5), [0, -1, 5])
reshape("reshape_flat", U(2, 3, 4), [-1])
reshape("reshape_zero_zero_minus1", U(2, 3, 4, 5), [0, 0, -1])
reshape("reshape_split_dim", U(2, 12), [2, 3, 4])
reshape("reshape_minus1_first", U(6, 5), [-1, 10])
reshape("reshape_opset21", U(3, 8), [0, 2, -1], opset=21)

unary("flatten_axis0", "Flatten", U(2, 3, 4), axis=0)
unary("flatten_axis1", "Flatten", U(2, 3, 4, 5), axis=1)
unary("flatten_axis_minus1", "Flatten", U(2, 3, 4), axis=-1)
unary("flatten_axis2", "Flatten", U(2, 3, 4, 5), axis=2)


def axes_op(case_id, op, x, axes):
    case(case_id, [N(op, ["x", "axes"])], {"x": x}, inits={"axes": I64(axes)})


axes_op("squeeze_axes", "Squeeze", U(1, 3, 1, 5), [0, -2])
case("squeeze_all_ones", [N("Squeeze", ["x"])], {"x": U(1, 4, 1, 1)})
axes_op("unsqueeze_negative", "Unsqueeze", U(3, 5), [-1])
axes_op("unsqueeze_two_axes", "Unsqueeze", U(3, 5), [0, 3])
axes_op("unsqueeze_negative_middle", "Unsqueeze", U(2, 3, 4), [-2])

# ================================================================ Concat, Split, Slice

case("concat_three_negative_axis", [N("Concat", ["a", "b", "c"], axis=-1)],
     {"a": U(2, 3, 1), "b": U(2, 3, 4), "c": U(2, 3, 2)})
case("concat_axis0", [N("Concat", ["a", "b"], axis=0)], {"a": U(2, 3), "b": U(1, 3)})
case("concat_channels_with_const", [N("Concat", ["a", "b", "k"], axis=1)], {"a": U(1, 2, 5, 5), "b": U(1, 3, 5, 5)},
     inits={"k": U(1, 1, 5, 5)})
case("concat_single_input", [N("Concat", ["a"], axis=0)], {"a": U(3, 2)})

case("split_sizes_input", [N("Split", ["x", "split"], ["y0", "y1"], axis=-1)], {"x": U(2, 10)},
     outputs=["y0", "y1"], inits={"split": I64([3, 7])})
case("split_equal", [N("Split", ["x"], ["y0", "y1", "y2"], axis=0)], {"x": U(6, 4)}, outputs=["y0", "y1", "y2"])
case("split_three_sizes_axis1", [N("Split", ["x", "split"], ["y0", "y1", "y2"], axis=1)], {"x": U(2, 6, 3)},
     outputs=["y0", "y1", "y2"], inits={"split": I64([1, 2, 3])})
case("split_num_outputs_opset18", [N("Split", ["x"], ["y0", "y1", "y2"], axis=1, num_outputs=3)], {"x": U(2, 9)},
     outputs=["y0", "y1", "y2"], opset=18)
case("split_num_outputs_uneven_opset18", [N("Split", ["x"], ["y0", "y1", "y2"], axis=-1, num_outputs=3)],
     {"x": U(3, 10)}, outputs=["y0", "y1", "y2"], opset=18)
case("split_num_outputs_opset21", [N("Split", ["x"], ["y0", "y1"], axis=0, num_outputs=2)], {"x": U(4, 3)},
     outputs=["y0", "y1"], opset=21)


def slice_case(case_id, x, starts, ends, axes=None, steps=None):
    ins, inits = ["x", "starts", "ends"], {"starts": I64(starts), "ends": I64(ends)}
    if axes is not None:
        ins.append("axes")
        inits["axes"] = I64(axes)
    if steps is not None:
        if axes is None:
            ins.append("")
        ins.append("steps")
        inits["steps"] = I64(steps)
    case(case_id, [N("Slice", ins)], {"x": x}, inits=inits)


INT64_MIN, INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
slice_case("slice_two_axes", U(5, 7, 9), [1, 2], [4, 8], axes=[0, 2])
slice_case("slice_negative_starts_ends", U(5, 7, 9), [-3], [-1], axes=[-1])
slice_case("slice_step2", U(4, 9), [0], [9], axes=[1], steps=[2])
slice_case("slice_reverse", U(3, 6), [-1], [INT64_MIN], axes=[1], steps=[-1])
slice_case("slice_negative_step2", U(9, 4), [7], [1], axes=[0], steps=[-2])
slice_case("slice_axes_omitted_ends_beyond", U(4, 5, 9), [1, 0, 2], [3, 100, 9])
slice_case("slice_int64_max_end", U(6, 5), [2], [INT64_MAX], axes=[0])
slice_case("slice_axes_omitted_with_steps", U(6, 7), [0, 1], [6, 7], steps=[3, 2])

# ================================================================ Gather, Expand, Where, Cast

case("gather_axis0_const_negative_indices", [N("Gather", ["x", "idx"], axis=0)], {"x": U(10, 6)},
     inits={"idx": I64([[0, 9, -1], [3, 3, -10]])})
case("gather_axis1_indices_input", [N("Gather", ["x", "idx"], axis=1)],
     {"x": U(3, 8, 4), "idx": I64([5, -8, 0, 7, -1])})
case("gather_scalar_index", [N("Gather", ["x", "idx"], axis=1)], {"x": U(3, 5, 2)}, inits={"idx": I64(-2)})
case("gather_axis_minus1", [N("Gather", ["x", "idx"], axis=-1)], {"x": U(2, 3, 7)}, inits={"idx": I64([[6, 0]])})
case("gather_embedding_table", [N("Gather", ["table", "ids"], axis=0)], {"ids": I64([[3, 0, 11, 7, 3]])},
     inits={"table": U(12, 8)})

case("expand_broadcast", [N("Expand", ["x", "shape"])], {"x": U(3, 1)}, inits={"shape": I64([2, 3, 4])})
case("expand_same_rank", [N("Expand", ["x", "shape"])], {"x": U(1, 4)}, inits={"shape": I64([3, 4])})
case("expand_shape_with_ones", [N("Expand", ["x", "shape"])], {"x": U(2, 1, 5)}, inits={"shape": I64([1, 1, 4, 1])})

case("where_const_condition", [N("Where", ["cond", "a", "b"])], {"a": U(3, 4), "b": U(1, 4)},
     inits={"cond": _rng.random((3, 4)) < 0.5})
case("where_bool_input", [N("Where", ["cond", "a", "b"])],
     {"cond": _rng.random((2, 1, 5)) < 0.5, "a": U(2, 3, 5)}, inits={"b": F(-2.0)})

case("cast_float_int64_float", [N("Mul", ["x", "s"], "xs"), N("Cast", ["xs"], "i", to=TensorProto.INT64),
                                N("Cast", ["i"], to=TensorProto.FLOAT)], {"x": U(3, 7)}, inits={"s": F(10.0)})
case("cast_int64_input_to_float", [N("Cast", ["i"], to=TensorProto.FLOAT)],
     {"i": _rng.integers(-1000, 1000, (4, 5), dtype=np.int64)})
case("cast_float_to_int64_output", [N("Mul", ["x", "s"], "xs"), N("Cast", ["xs"], to=TensorProto.INT64)],
     {"x": U(2, 6)}, inits={"s": F(7.0)}, outputs=[("y", np.int64)])

# ================================================================ Constant, Shape

case("constant_node", [N("Constant", [], "k", value=numpy_helper.from_array(U(1, 4), "k")), N("Add", ["x", "k"])],
     {"x": U(3, 4)})
case("constant_scalar_float", [N("Constant", [], "k", value_float=1.5), N("Mul", ["x", "k"])], {"x": U(2, 3)})
case("shape_gather_unsqueeze_concat_reshape",
     [N("Shape", ["x"], "s"), N("Gather", ["s", "i0"], "d0", axis=0), N("Unsqueeze", ["d0", "ax0"], "d0v"),
      N("Concat", ["d0v", "m1"], "target", axis=0), N("Reshape", ["x", "target"])],
     {"x": U(2, 3, 4, 5)}, inits={"i0": I64(0), "ax0": I64([0]), "m1": I64([-1])})
case("shape_start_end_reshape",
     [N("Shape", ["x"], "s", start=-2), N("Concat", ["m1", "s"], "target", axis=0), N("Reshape", ["x", "target"])],
     {"x": U(2, 3, 4, 5)}, inits={"m1": I64([-1])})

# ================================================================ small multi-op graphs

case("conv_bias_add_relu_residual",
     [N("Conv", ["x", "w", "b"], "c", pads=[1, 1, 1, 1]), N("Add", ["c", "x"], "r"), N("Relu", ["r"])],
     {"x": U(1, 8, 7, 7)}, inits={"w": U(8, 8, 3, 3) * 0.2, "b": U(8)})
case("matmul_bias_gelu_erf",
     [N("MatMul", ["x", "w"], "m"), N("Add", ["m", "b"], "h"), N("Div", ["h", "sqrt2"], "hd"), N("Erf", ["hd"], "e"),
      N("Add", ["e", "one"], "e1"), N("Mul", ["h", "e1"], "he"), N("Mul", ["he", "half"])],
     {"x": U(2, 5, 16)},
     inits={"w": U(16, 32) * 0.5, "b": U(32), "sqrt2": F(math.sqrt(2.0)), "one": F(1.0), "half": F(0.5)})
_mask = np.zeros((1, 1, 1, 5), dtype=np.float32)
_mask[..., 3:] = -10000.0
case("attention_scale_mask_softmax",
     [N("MatMul", ["q", "kt"], "s"), N("Mul", ["s", "scale"], "ss"), N("Add", ["ss", "mask"], "sm"),
      N("Softmax", ["sm"], "p", axis=-1), N("MatMul", ["p", "v"])],
     {"q": U(1, 2, 5, 8), "kt": U(1, 2, 8, 5), "v": U(1, 2, 5, 8)},
     inits={"scale": F(1 / math.sqrt(8.0)), "mask": _mask})
case("shape_driven_reshape_heads",
     [N("Shape", ["x"], "s"), N("Gather", ["s", "i01"], "d01", axis=0), N("Concat", ["d01", "heads"], "target", axis=0),
      N("Reshape", ["x", "target"], "r"), N("Transpose", ["r"], perm=[0, 2, 1, 3])],
     {"x": U(1, 6, 12)}, inits={"i01": I64([0, 1]), "heads": I64([3, 4])})
case("shared_weight_two_matmuls",
     [N("MatMul", ["a", "w"], "ya"), N("MatMul", ["b", "w"], "yb"), N("Add", ["ya", "yb"], "y"),
      N("Relu", ["yb"], "z")],
     {"a": U(3, 6), "b": U(3, 6)}, inits={"w": U(6, 5)}, outputs=["y", "z"])
case("shared_conv_weight",
     [N("Conv", ["a", "w"], "ca", pads=[1, 1, 1, 1]), N("Conv", ["b", "w"], "cb", strides=[2, 2], pads=[1, 1, 1, 1]),
      N("GlobalAveragePool", ["ca"], "ga"), N("GlobalAveragePool", ["cb"], "gb"), N("Sub", ["ga", "gb"])],
     {"a": U(1, 3, 6, 6), "b": U(1, 3, 9, 7)}, inits={"w": U(4, 3, 3, 3)})
case("intermediate_also_output",
     [N("Add", ["x", "b"], "t"), N("Sigmoid", ["t"], "y"), N("Mul", ["t", "y"], "z")],
     {"x": U(4, 5)}, inits={"b": U(5)}, outputs=["t", "z"])
case("layernorm_decomposed",
     [N("ReduceMean", ["x"], "mu", axes=[-1]), N("Sub", ["x", "mu"], "d"), N("Pow", ["d", "two"], "d2"),
      N("ReduceMean", ["d2"], "var", axes=[-1]), N("Add", ["var", "eps"], "ve"), N("Sqrt", ["ve"], "sd"),
      N("Div", ["d", "sd"], "n"), N("Mul", ["n", "g"], "ng"), N("Add", ["ng", "b"])],
     {"x": U(2, 4, 16)}, inits={"two": F(2.0), "eps": F(1e-5), "g": P(16), "b": U(16)})
_bn = bn_params(12)
case("inverted_residual_block",
     [N("Conv", ["x", "w1"], "e"), N("BatchNormalization", ["e", "s1", "b1", "m1", "v1"], "en"),
      N("Clip", ["en", "lo", "hi"], "er"),
      N("Conv", ["er", "wd"], "d", group=12, pads=[1, 1, 1, 1]),
      N("BatchNormalization", ["d", "s2", "b2", "m2", "v2"], "dn"), N("Clip", ["dn", "lo", "hi"], "dr"),
      N("Conv", ["dr", "w2"], "p"), N("BatchNormalization", ["p", "s3", "b3", "m3", "v3"], "pn"),
      N("Add", ["x", "pn"])],
     {"x": U(1, 4, 7, 7)},
     inits={"w1": U(12, 4, 1, 1), "wd": U(12, 1, 3, 3), "w2": U(4, 12, 1, 1) * 0.3, "lo": F(0.0), "hi": F(6.0),
            **{f"{k[0]}{i}": v for i, p in ((1, bn_params(12)), (2, bn_params(12)), (3, bn_params(4)))
               for k, v in (("s", p["scale"]), ("b", p["bias"]), ("m", p["mean"]), ("v", p["var"]))}})
case("gap_flatten_gemm_head",
     [N("GlobalAveragePool", ["x"], "g"), N("Flatten", ["g"], "f", axis=1), N("Gemm", ["f", "w", "b"], transB=1)],
     {"x": U(1, 16, 5, 5)}, inits={"w": U(10, 16), "b": U(10)})
case("multi_input_broadcast_chain",
     [N("Sub", ["a", "b"], "d"), N("Mul", ["d", "d"], "d2"), N("ReduceSum", ["d2", "ax"], "s", keepdims=0),
      N("Sqrt", ["s"])],
     {"a": U(3, 1, 6), "b": U(4, 6)}, inits={"ax": I64([-1])})


# ================================================================ quantized operators
# Integers over their whole range; zero points off centre; per-axis scales where the op takes them.

def Q8(*shape, signed=False) -> np.ndarray:
    return _rng.integers(-128 if signed else 0, 128 if signed else 256, shape).astype(np.int8 if signed else np.uint8)


def ZP(value, signed=False) -> np.ndarray:
    return np.asarray(value, dtype=np.int8 if signed else np.uint8)


U8, S8, I32 = np.uint8, np.int8, np.int32
case("quantize_linear_u8", [N("QuantizeLinear", ["x", "s", "z"])], {"x": U(3, 7, 5) * 3},
     inits={"s": F(0.0137), "z": ZP(131)}, outputs=[("y", U8)])
case("quantize_linear_s8_per_axis", [N("QuantizeLinear", ["x", "s", "z"], axis=1)], {"x": U(2, 4, 9) * 2},
     inits={"s": P(4) * 0.01, "z": ZP([-3, 0, 5, 17], signed=True)}, outputs=[("y", S8)])
case("quantize_linear_default_zero_point_halves",
     [N("QuantizeLinear", ["x", "s"])], {"x": np.asarray([[0.5, 1.5, 2.5, -0.5, 3.5, 254.5, 300.0, 7.49]], np.float32)},
     inits={"s": F(1.0)}, outputs=[("y", U8)])
case("dequantize_linear_u8", [N("DequantizeLinear", ["x", "s", "z"])], {"x": Q8(3, 11)},
     inits={"s": F(0.021), "z": ZP(119)})
case("dequantize_linear_s8_per_axis", [N("DequantizeLinear", ["x", "s", "z"], axis=-1)], {"x": Q8(5, 3, signed=True)},
     inits={"s": P(3) * 0.1, "z": ZP([1, -2, 0], signed=True)})
case("dequantize_linear_int32_bias", [N("DequantizeLinear", ["x", "s"])],
     {"x": _rng.integers(-100000, 100000, (6,)).astype(np.int32)}, inits={"s": F(0.0003)})
case("matmul_integer_u8s8_a_zero_point", [N("MatMulInteger", ["a", "b", "az"])], {"a": Q8(5, 23)},
     inits={"b": Q8(23, 13, signed=True), "az": ZP(97)}, outputs=[("y", I32)])
case("matmul_integer_both_zero_points_batched", [N("MatMulInteger", ["a", "b", "az", "bz"])], {"a": Q8(2, 3, 7)},
     inits={"b": Q8(7, 6), "az": ZP(12), "bz": ZP(200)}, outputs=[("y", I32)])
case("matmul_integer_s8_activations", [N("MatMulInteger", ["a", "b", "az"])], {"a": Q8(4, 16, signed=True)},
     inits={"b": Q8(16, 9, signed=True), "az": ZP(-7, signed=True)}, outputs=[("y", I32)])
case("qlinear_matmul_u8s8", [N("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"])], {"a": Q8(6, 33)},
     inits={"as": F(0.02), "az": ZP(128), "b": Q8(33, 20, signed=True), "bs": F(0.004), "bz": ZP(0, signed=True),
            "ys": F(0.05), "yz": ZP(110)}, outputs=[("y", U8)])
case("conv_integer_zero_points_pads", [N("ConvInteger", ["x", "w", "xz"], pads=[1, 2, 1, 0])], {"x": Q8(1, 3, 7, 6)},
     inits={"w": Q8(4, 3, 3, 3, signed=True), "xz": ZP(100)}, outputs=[("y", I32)])
case("conv_integer_weight_zero_point", [N("ConvInteger", ["x", "w", "xz", "wz"], strides=[2, 2])], {"x": Q8(1, 2, 9, 8)},
     inits={"w": Q8(3, 2, 3, 3), "xz": ZP(3), "wz": ZP(131)}, outputs=[("y", I32)])
# Weights as graph inputs (not constants): the zero point's term is summed in the kernel.
case("conv_integer_weights_as_input", [N("ConvInteger", ["x", "w", "xz"], pads=[1, 1, 1, 1])],
     {"x": Q8(1, 4, 5, 6), "w": Q8(3, 4, 3, 3, signed=True)}, inits={"xz": ZP(77)}, outputs=[("y", I32)])
case("matmul_integer_b_as_input_s8_a", [N("MatMulInteger", ["a", "b", "az"])],
     {"a": Q8(3, 12, signed=True), "b": Q8(12, 5, signed=True)}, inits={"az": ZP(9, signed=True)}, outputs=[("y", I32)])
_qconv = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
case("qlinear_conv_per_channel_bias_stride2", [N("QLinearConv", _qconv + ["b"], pads=[1, 1, 1, 1], strides=[2, 2])],
     {"x": Q8(1, 5, 9, 11)},
     inits={"xs": F(0.03), "xz": ZP(121), "w": Q8(8, 5, 3, 3, signed=True), "ws": P(8) * 0.005,
            "wz": np.zeros(8, np.int8), "ys": F(0.08), "yz": ZP(90),
            "b": _rng.integers(-2000, 2000, (8,)).astype(np.int32)}, outputs=[("y", U8)])
case("qlinear_conv_s8_activations_groups2", [N("QLinearConv", _qconv, group=2, pads=[0, 1, 0, 1])],
     {"x": Q8(1, 4, 6, 7, signed=True)},
     inits={"xs": F(0.04), "xz": ZP(-5, signed=True), "w": Q8(6, 2, 3, 3, signed=True), "ws": F(0.01),
            "wz": ZP(0, signed=True), "ys": F(0.2), "yz": ZP(3, signed=True)}, outputs=[("y", S8)])
case("qdq_conv_relu_chain",
     [N("QuantizeLinear", ["x", "xs", "xz"], "q"), N("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], "c",
                                                     pads=[1, 1, 1, 1]),
      N("DequantizeLinear", ["c", "ys", "yz"], "d"), N("Relu", ["d"])],
     {"x": U(1, 3, 8, 8)},
     inits={"xs": F(0.008), "xz": ZP(128), "w": Q8(6, 3, 3, 3, signed=True), "ws": P(6) * 0.004,
            "wz": np.zeros(6, np.int8), "ys": F(0.03), "yz": ZP(100), "b": _rng.integers(-500, 500, (6,)).astype(np.int32)})


# ================================================================ padding, attention, trigonometry

case("pad_constant_crop_value", [N("Pad", ["x", "p", "v"], mode="constant")], {"x": U(1, 3, 5, 6)},
     inits={"p": I64([0, 0, 2, -1, 0, 1, 1, 3]), "v": F(0.25)}, opset=18)
case("pad_reflect_axes", [N("Pad", ["x", "p", "", "ax"], mode="reflect")], {"x": U(2, 3, 5, 6)},
     inits={"p": I64([2, 3, 4, 1]), "ax": I64([-1, 2])}, opset=18)
case("pad_edge", [N("Pad", ["x", "p"], mode="edge")], {"x": U(2, 4, 3)}, inits={"p": I64([0, 2, 1, 1, 0, 3])})
case("pad_wrap", [N("Pad", ["x", "p"], mode="wrap")], {"x": U(1, 2, 4, 5)}, inits={"p": I64([0, 0, 3, 2, 0, 0, 1, 6])},
     opset=19)
case("attention_gqa_causal_mask_past",
     [N("Attention", ["q", "k", "v", "m", "pk", "pv"], ["y", "pko", "pvo"], q_num_heads=4, kv_num_heads=2,
        is_causal=1)],
     {"q": U(2, 3, 32), "k": U(2, 3, 16), "v": U(2, 3, 12), "m": U(3, 7) > -0.6, "pk": U(2, 2, 4, 8),
      "pv": U(2, 2, 4, 6)}, outputs=("y", "pko", "pvo"), opset=23)
case("attention_4d_float_mask_softcap_probs",
     [N("Attention", ["q", "k", "v", "m"], ["y", "", "", "qk"], softcap=2.0, scale=0.3, qk_matmul_output_mode=3)],
     {"q": U(1, 2, 5, 8), "k": U(1, 2, 7, 8), "v": U(1, 2, 7, 4), "m": U(2, 5, 7)}, outputs=("y", "qk"), opset=23)
case("trigonometric_chain",
     [N("Sin", ["x"], "a"), N("Cos", ["x"], "b"), N("Atan", ["a"], "c"), N("Sinh", ["b"], "d"),
      N("Asinh", ["c"], "e"), N("Add", ["d", "e"], "f"), N("Tanh", ["f"], "g"), N("Acos", ["g"], "h"),
      N("Tan", ["a"], "i"), N("Mul", ["h", "i"])],
     {"x": A(3, 17)})
case("resize_linear_half_pixel_scales", [N("Resize", ["x", "", "s"], mode="linear")], {"x": U(1, 3, 5, 7)},
     inits={"s": np.asarray([1, 1, 2.0, 1.5], dtype=np.float32)}, opset=13)
case("resize_cubic_align_corners_sizes", [N("Resize", ["x", "", "", "sz"], mode="cubic",
                                            coordinate_transformation_mode="align_corners")],
     {"x": U(2, 2, 6, 5)}, inits={"sz": I64([2, 2, 4, 9])}, opset=13)
case("resize_nearest_asymmetric_floor", [N("Resize", ["x", "", "s"], mode="nearest",
                                           coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
     {"x": U(1, 4, 3, 3)}, inits={"s": np.asarray([1, 1, 3, 2], dtype=np.float32)}, opset=13)
case("nll_loss_weighted_ignore_mean", [N("NegativeLogLikelihoodLoss", ["x", "t", "w"], ignore_index=2)],
     {"x": U(3, 5, 4), "t": np.asarray([[0, 2, 4, 1], [3, 3, 2, 0], [1, 4, 4, 2]], dtype=np.int64)},
     inits={"w": P(5)}, opset=13)
case("softmax_cross_entropy_sum_log_prob", [N("SoftmaxCrossEntropyLoss", ["x", "t"], ["y", "lp"], reduction="sum")],
     {"x": U(4, 6), "t": np.asarray([5, 0, 3, 3], dtype=np.int64)}, outputs=("y", "lp"), opset=13)
case("top_k_smallest_axis1", [N("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)], {"x": U(3, 11, 2)},
     inits={"k": I64([4])}, outputs=("v", ("i", np.int64)))
case("gather_nd_batch_dims", [N("GatherND", ["x", "i"], batch_dims=1)],
     {"x": U(2, 5, 4, 3), "i": np.asarray([[[1, -1], [4, 0]], [[0, 2], [3, 3]]], dtype=np.int64)})
case("scatter_nd_add", [N("ScatterND", ["x", "i", "u"], reduction="add")],
     {"x": U(6, 4), "i": np.asarray([[1], [4], [1]], dtype=np.int64), "u": U(3, 4)}, opset=18)
case("scatter_elements_axis1_max", [N("ScatterElements", ["x", "i", "u"], axis=1, reduction="max")],
     {"x": U(3, 5), "i": np.asarray([[0, 4], [2, 2], [-1, 1]], dtype=np.int64), "u": U(3, 2)}, opset=18)
case("lp_pool_p3_strided_pads", [N("LpPool", ["x"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], p=3)],
     {"x": U(1, 3, 7, 6)}, opset=18)
case("average_pool_dilated_count_pad", [N("AveragePool", ["x"], kernel_shape=[2, 3], dilations=[2, 2],
                                          pads=[1, 1, 1, 1], count_include_pad=1)], {"x": U(1, 2, 8, 9)}, opset=19)
case("rotary_embedding_positions_packed", [N("RotaryEmbedding", ["x", "c", "s", "p"], num_heads=2,
                                              rotary_embedding_dim=4)],
     {"x": U(2, 3, 12), "p": np.asarray([[0, 1, 2], [5, 3, 7]], dtype=np.int64)},
     inits={"c": U(8, 2), "s": U(8, 2)}, opset=23)
case("einsum_batched_ellipsis_broadcast", [N("Einsum", ["a", "b"], equation="...ij,...jk->...ik")],
     {"a": U(2, 3, 4, 5), "b": U(1, 3, 5, 6)}, opset=12)
case("einsum_diagonal_and_outer", [N("Einsum", ["a", "b"], equation="iij,k->jk")], {"a": U(4, 4, 3), "b": U(5)},
     opset=12)
case("bit_shift_and_bitwise_uint32",
     [N("BitShift", ["a", "s"], "l", direction="LEFT"), N("BitShift", ["a", "s"], "r", direction="RIGHT"),
      N("BitwiseXor", ["l", "r"], "x"), N("BitwiseNot", ["a"], "n"), N("BitwiseAnd", ["x", "n"], "m"),
      N("BitwiseOr", ["m", "a"])],
     {"a": np.arange(0, 4000000000, 97000003, dtype=np.uint32)[:40].reshape(5, 8),
      "s": np.asarray([0, 1, 5, 17, 31, 3, 9, 30], dtype=np.uint32)}, outputs=(("y", np.uint32),), opset=18)
case("eye_like_offset", [N("EyeLike", ["x"], k=-1, dtype=1), ], {"x": I64([[1, 2, 3], [4, 5, 6]])})
case("grid_sample_cubic_reflection", [N("GridSample", ["x", "g"], mode="cubic", padding_mode="reflection")],
     {"x": U(2, 3, 5, 6), "g": U(2, 4, 7, 2) * 1.4}, opset=20)
case("grid_sample_linear_zeros_aligned_3d", [N("GridSample", ["x", "g"], align_corners=1)],
     {"x": U(1, 2, 3, 4, 5), "g": U(1, 2, 3, 4, 3) * 1.2}, opset=20)
case("affine_grid_then_sample", [N("AffineGrid", ["t", "s"], "g"), N("GridSample", ["x", "g"], padding_mode="border")],
     {"x": U(2, 3, 6, 5), "t": U(2, 2, 3)}, inits={"s": I64([2, 3, 4, 7])}, opset=20)
case("max_pool_indices_padded_strided", [N("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2], strides=[2, 2],
                                           pads=[1, 0, 1, 1])],
     {"x": U(2, 3, 7, 6)}, outputs=("y", ("i", np.int64)), opset=12)
case("tensor_scatter_circular", [N("TensorScatter", ["c", "u", "w"], mode="circular")],
     {"c": U(2, 3, 5, 4), "u": U(2, 3, 2, 4), "w": np.asarray([4, 1], dtype=np.int64)}, opset=24)
case("dynamic_quantize_then_dequantize", [N("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
                                          N("DequantizeLinear", ["q", "s", "z"])],
     {"x": U(3, 7) * 4 + 1}, opset=13)
case("lstm_bidirectional_peepholes_lengths",
     [N("LSTM", ["x", "w", "r", "b", "len", "h0", "c0", "p"], ["y", "yh", "yc"], hidden_size=4,
        direction="bidirectional", clip=2.5)],
     {"x": U(5, 2, 3), "len": np.asarray([5, 3], dtype=np.int32), "h0": U(2, 2, 4), "c0": U(2, 2, 4)},
     inits={"w": U(2, 16, 3), "r": U(2, 16, 4), "b": U(2, 32), "p": U(2, 12)}, outputs=("y", "yh", "yc"))
# (onnxruntime runs no batch-first recurrence; the conformance case test_gru_batchwise covers it)
case("gru_linear_before_reset", [N("GRU", ["x", "w", "r", "b"], ["y", "yh"], hidden_size=5, linear_before_reset=1)],
     {"x": U(4, 2, 3)}, inits={"w": U(1, 15, 3), "r": U(1, 15, 5), "b": U(1, 30)}, outputs=("y", "yh"), opset=14)
case("gru_reverse", [N("GRU", ["x", "w", "r"], ["y", "yh"], hidden_size=3, direction="reverse")],
     {"x": U(4, 2, 3)}, inits={"w": U(1, 9, 3), "r": U(1, 9, 3)}, outputs=("y", "yh"))
case("rnn_relu_initial_state", [N("RNN", ["x", "w", "r", "b", "", "h0"], ["y", "yh"], hidden_size=4,
                                  activations=["Relu"])],
     {"x": U(3, 2, 5), "h0": U(1, 2, 4)}, inits={"w": U(1, 4, 5), "r": U(1, 4, 4), "b": U(1, 8)}, outputs=("y", "yh"))
case("dft_real_onesided_axis", [N("DFT", ["x", "", "a"], onesided=1)], {"x": U(2, 3, 10, 1)},
     inits={"a": I64(2)}, opset=20)
case("dft_inverse_complex_padded", [N("DFT", ["x", "n"], inverse=1, axis=1)], {"x": U(2, 6, 2)},
     inits={"n": I64(8)}, opset=17)
case("col2im_strided_dilated_padded", [N("Col2Im", ["x", "img", "blk"], strides=[2, 1], dilations=[1, 2],
                                        pads=[1, 0, 0, 1])],
     {"x": U(2, 12, 6)}, inits={"img": I64([6, 5]), "blk": I64([2, 3])}, opset=18)
case("hann_window_scales_input", [N("HannWindow", ["n"], "w", periodic=0), N("Mul", ["x", "w"])], {"x": U(3, 10)},
     inits={"n": np.asarray(10, dtype=np.int64)})
case("blackman_window_periodic_double", [N("BlackmanWindow", ["n"], "w", output_datatype=11), N("Cast", ["w"], to=1),
                                         ], {}, inits={"n": np.asarray(12, dtype=np.int32)})
case("center_crop_pad_crop_and_pad", [N("CenterCropPad", ["x", "s"], axes=[1, -1])], {"x": U(2, 7, 4)},
     inits={"s": I64([4, 9])}, opset=18)
case("pow_int32", [N("Pow", ["a", "b"])], {"a": np.arange(-6, 6, dtype=np.int32).reshape(3, 4),
                                           "b": np.asarray([0, 1, 2, 3], dtype=np.int32)}, outputs=(("y", np.int32),))
case("reduce_over_an_empty_axis", [N("ReduceProd", ["x", "a"], "m"), N("ReduceL2", ["x", "a"], "s"),
                                   N("Add", ["m", "s"])],
     {"x": np.zeros((2, 0, 3), dtype=np.float32)}, inits={"a": I64([1])}, outputs=("s", "m"), opset=18)
case("dropout_mask_at_inference", [N("Dropout", ["x", "r"], ["y", "mask"])], {"x": U(3, 4)},
     inits={"r": F(0.3)}, outputs=("y", ("mask", np.bool_)), opset=13)
case("quantize_blocked_int16", [N("QuantizeLinear", ["x", "s", "z"], "q", axis=1, block_size=3),
                                N("DequantizeLinear", ["q", "s", "z"], axis=1, block_size=3)],
     {"x": U(2, 7) * 50}, inits={"s": P(2, 3), "z": np.asarray([[1, -2, 0], [3, 0, -7]], dtype=np.int16)},
     opset=21)

# Control flow, expanded on import: a while loop (its condition computed by its body) whose body
# reads an outer weight; a reverse Scan whose body holds an If on an outer constant (captured
# through both levels); opset 8's batched Scan.
_vi = helper.make_tensor_value_info
_loop_body = helper.make_graph(
    [N("MatMul", ["x_in", "w"], "xw"), N("Add", ["xw", "b"], "xb"), N("Tanh", ["xb"], "x_out"),
     N("Less", ["i", "five"], "go"), N("ReduceSum", ["x_out", "ax"], "s_out", keepdims=0)],
    "loop_body", [_vi("i", onnx.TensorProto.INT64, []), _vi("c", onnx.TensorProto.BOOL, []),
                  _vi("x_in", onnx.TensorProto.FLOAT, [3, 4])],
    [_vi("go", onnx.TensorProto.BOOL, []), _vi("x_out", onnx.TensorProto.FLOAT, [3, 4]),
     _vi("s_out", onnx.TensorProto.FLOAT, [3])],
    initializer=[numpy_helper.from_array(I64(5).reshape(()), "five"),
                 numpy_helper.from_array(I64([1]), "ax")])
case("loop_while_reads_outer_weights", [N("Loop", ["m", "go0", "x"], ["y", "sums"], body=_loop_body)],
     {"x": U(3, 4)}, inits={"m": I64(10).reshape(()), "go0": np.asarray(True), "w": U(4, 4), "b": U(4)},
     outputs=(("y", np.float32, [3, 4]), "sums"))
_then = helper.make_graph([N("Mul", ["h", "g"], "t")], "then", [], [_vi("t", onnx.TensorProto.FLOAT, [4])])
_else = helper.make_graph([N("Sub", ["h", "g"], "e")], "else", [], [_vi("e", onnx.TensorProto.FLOAT, [4])])
_scan_body = helper.make_graph(
    [N("Add", ["acc", "row"], "h"), N("If", ["flag"], ["picked"], then_branch=_then, else_branch=_else),
     N("Identity", ["h"], "acc_out"), N("Sigmoid", ["picked"], "emit")],
    "scan_body", [_vi("acc", onnx.TensorProto.FLOAT, [4]), _vi("row", onnx.TensorProto.FLOAT, [4])],
    [_vi("acc_out", onnx.TensorProto.FLOAT, [4]), _vi("emit", onnx.TensorProto.FLOAT, [4])])
case("scan_reverse_with_if_on_outer_constant",
     [N("Scan", ["a0", "x"], ["a", "ys"], body=_scan_body, num_scan_inputs=1, scan_input_axes=[1],
        scan_input_directions=[1], scan_output_axes=[-1], scan_output_directions=[1])],
     {"x": U(4, 5)}, inits={"a0": U(4), "flag": np.asarray(True), "g": U(4)}, outputs=("a", "ys"))
_scan8_body = helper.make_graph(
    [N("Mul", ["s_in", "v"], "s_out"), N("Relu", ["s_out"], "o")], "scan8_body",
    [_vi("s_in", onnx.TensorProto.FLOAT, [3]), _vi("v", onnx.TensorProto.FLOAT, [3])],
    [_vi("s_out", onnx.TensorProto.FLOAT, [3]), _vi("o", onnx.TensorProto.FLOAT, [3])])
case("scan_opset8_batch_of_two", [N("Scan", ["", "s", "x"], ["y", "z"], body=_scan8_body, num_scan_inputs=1,
                                    directions=[1])],
     {"s": U(2, 3), "x": U(2, 5, 3)}, outputs=("y", "z"), opset=8)


# ================================================================ models of the error tests

def unsupported_ops_model() -> onnx.ModelProto:
    """A valid model with two NonZero nodes and one Unique node (data-dependent output shapes,
    which Tyche refuses)."""
    nodes = [N("NonZero", ["x"], "n0"), N("NonZero", ["x"], "n1"), N("Unique", ["x"], "u")]
    return make_model("unsupported_ops", nodes, {"x": U(2, 3) * 4},
                      [("n0", np.int64), ("n1", np.int64), "u"])


def symbolic_dim_model() -> onnx.ModelProto:
    """Input `feats` of shape [batch, 3] (batch symbolic): y = Relu(feats + bias)."""
    return make_model("symbolic_dim", [N("Add", ["feats", "b"], "t"), N("Relu", ["t"])], {"feats": U(2, 3)}, ["y"],
                      inits={"b": U(3)}, input_shapes={"feats": ["batch", 3]})


def pixels_model() -> onnx.ModelProto:
    """Input `pixels` float32 [1, 2, 4, 4]: y = Relu(GlobalAveragePool(pixels))."""
    return make_model("pixels", [N("GlobalAveragePool", ["pixels"], "g"), N("Relu", ["g"])],
                      {"pixels": U(1, 2, 4, 4)}, ["y"])


if __name__ == "__main__":
    import time

    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    for cid, model, feeds in CASES:
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        outs = sess.run(None, feeds)
        for vo, o in zip(model.graph.output, outs):
            declared = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vo.type.tensor_type.shape.dim]
            assert declared == list(o.shape), (cid, vo.name, declared, o.shape)
            assert np.isfinite(o).all(), (cid, vo.name)
            print(f"{cid:45s} {vo.name:3s} {str(o.dtype):8s} {str(list(o.shape)):16s} "
                  f"[{o.min():+.3g}, {o.max():+.3g}]")
    print(f"{len(CASES)} cases in {time.perf_counter() - t0:.2f} s")
