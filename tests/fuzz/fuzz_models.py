"""The ONNX models, .npy headers and structured model mutations that tests/fuzz/fuzz_inputs.py builds
its cases from (issue 60), and the seed corpus it writes for scripts/fuzz_importer.sh.

Models is a mixin of tests/fuzz/fuzz_cases.py's Cases (and so of fuzz_inputs.py's Fuzz); it needs
nothing of the instance (write_corpus runs on an uninitialised Fuzz).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Models:
    # ---- models ----

    @staticmethod
    def model(nodes, inputs, outputs, inits=(), opset=17, name="fuzz"):
        g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tyche-fuzz")
        m.ir_version = 8
        return m

    @staticmethod
    def vi(name, shape, elem=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, shape)

    def mlp(self):
        """y = Relu(x @ W + b): x [1, 8], W [8, 4] in raw_data, b [4] in float_data."""
        rng = np.random.default_rng(1)
        W = numpy_helper.from_array(rng.uniform(-1, 1, (8, 4)).astype(np.float32), "W")
        b = helper.make_tensor("b", TensorProto.FLOAT, [4], rng.uniform(-1, 1, 4).astype(np.float32).tolist())
        nodes = [helper.make_node("MatMul", ["x", "W"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]),
                 helper.make_node("Relu", ["u"], ["y"])]
        return self.model(nodes, [self.vi("x", [1, 8])], [self.vi("y", [1, 4])], [W, b], name="mlp")

    def conv(self):
        rng = np.random.default_rng(2)
        W = numpy_helper.from_array(rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32), "Wc")
        B = numpy_helper.from_array(rng.uniform(-1, 1, 4).astype(np.float32), "Bc")
        nodes = [helper.make_node("Conv", ["x", "Wc", "Bc"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
                 helper.make_node("Relu", ["c"], ["r"]),
                 # copies that keep the chain channels last (the layout pass)
                 helper.make_node("Dropout", ["r"], ["d", "mask"]), helper.make_node("Identity", ["d"], ["i"]),
                 helper.make_node("MaxPool", ["i"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                 helper.make_node("GlobalAveragePool", ["p"], ["y"])]
        return self.model(nodes, [self.vi("x", [1, 3, 8, 8])], [self.vi("y", [1, 4, 1, 1])], [W, B], name="conv")

    def conv_opset9(self):
        """The conv model stamped opset 9, the model zoo's: import upgrades it with ONNX's version
        converter, which crashed on malformed old models before import checked them."""
        m = self.conv()
        m.opset_import[0].version = 9
        m.graph.name = "conv_opset9"
        return m

    def narrow(self):
        """Narrow types (float8, int4): a float8 input cast to float, plus an int4 initializer
        packed two to a byte in raw_data, dequantized; mutations reach the unpacking."""
        w = helper.make_tensor("Wq", TensorProto.INT4, [2, 3], [-8, -1, 0, 3, 7, 5])
        scale = numpy_helper.from_array(np.array(0.5, np.float32), "sc")
        nodes = [helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
                 helper.make_node("DequantizeLinear", ["Wq", "sc"], ["d"]),
                 helper.make_node("Add", ["f", "d"], ["y"])]
        m = self.model(nodes, [self.vi("x", [2, 3], TensorProto.FLOAT8E4M3FN)], [self.vi("y", [2, 3])], [w, scale],
                       opset=21, name="narrow")
        m.ir_version = 10
        return m

    def shapes(self):
        """Gather, Slice, Reshape, Transpose, Concat and Softmax with int64 initializers."""
        rng = np.random.default_rng(3)
        E = numpy_helper.from_array(rng.uniform(-1, 1, (16, 6)).astype(np.float32), "E")
        inits = [E, numpy_helper.from_array(np.array([0], np.int64), "st"),
                 numpy_helper.from_array(np.array([4], np.int64), "en"),
                 numpy_helper.from_array(np.array([1], np.int64), "ax"),
                 numpy_helper.from_array(np.array([2, 2, 4], np.int64), "shp")]
        nodes = [helper.make_node("Gather", ["E", "ids"], ["g"], axis=0),
                 helper.make_node("Slice", ["g", "st", "en", "ax"], ["s"]),
                 helper.make_node("Reshape", ["s", "shp"], ["r"]),
                 helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
                 helper.make_node("Concat", ["t", "t"], ["c"], axis=2),
                 helper.make_node("Softmax", ["c"], ["y"], axis=-1)]
        return self.model(nodes, [self.vi("ids", [4], TensorProto.INT64)], [self.vi("y", [2, 4, 4])], inits, name="shapes")

    def gemm_norm(self):
        rng = np.random.default_rng(4)
        inits = [numpy_helper.from_array(rng.uniform(-1, 1, (6, 5)).astype(np.float32), "G"),
                 numpy_helper.from_array(rng.uniform(-1, 1, 5).astype(np.float32), "gc"),
                 numpy_helper.from_array(np.ones(5, np.float32), "scale"),
                 numpy_helper.from_array(np.zeros(5, np.float32), "bias")]
        nodes = [helper.make_node("Gemm", ["x", "G", "gc"], ["h"], transB=0),
                 helper.make_node("LayerNormalization", ["h", "scale", "bias"], ["n"], axis=-1),
                 helper.make_node("Sigmoid", ["n"], ["y"])]
        return self.model(nodes, [self.vi("x", [3, 6])], [self.vi("y", [3, 5])], inits, name="gemm_norm")

    def external_valid(self, location="weights.bin", offset=None, length=64):
        """y = x + W, W [16] float32 in external data."""
        W = TensorProto()
        W.name = "W_ext"
        W.data_type = TensorProto.FLOAT
        W.dims.extend([16])
        W.data_location = TensorProto.EXTERNAL
        kv = [("location", location)]
        if offset is not None:
            kv.append(("offset", str(offset)))
        if length is not None:
            kv.append(("length", str(length)))
        for k, v in kv:
            e = W.external_data.add()
            e.key, e.value = k, v
        nodes = [helper.make_node("Add", ["x", "W_ext"], ["y"])]
        return self.model(nodes, [self.vi("x", [16])], [self.vi("y", [16])], [W], name="ext")

    def external(self, entries, dims=(16,)):
        """y = x + W_ext, W_ext float32 of `dims` whose data is external with these key-value pairs."""
        W = TensorProto()
        W.name = "W_ext"
        W.data_type = TensorProto.FLOAT
        W.dims.extend(dims)
        W.data_location = TensorProto.EXTERNAL
        for k, v in entries:
            e = W.external_data.add()
            e.key, e.value = k, str(v)
        nodes = [helper.make_node("Add", ["x", "W_ext"], ["y"])]
        return self.model(nodes, [self.vi("x", list(dims))], [self.vi("y", list(dims))], [W], name="ext")

    @staticmethod
    def big_tensor(name, dims, raw: bytes | None = b""):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        if raw is not None:
            t.raw_data = raw
        return t

    @staticmethod
    def typed_tensor(name, elem, dims, values):
        """A tensor whose values are in its typed field (float_data, int64_data), not checked
        against its dims."""
        t = TensorProto()
        t.name = name
        t.data_type = elem
        t.dims.extend(dims)
        (t.float_data if elem == TensorProto.FLOAT else t.int64_data).extend(values)
        return t

    def save(self, folder: Path, m, name="m.onnx") -> str:
        p = folder / name
        p.write_bytes(m.SerializeToString() if not isinstance(m, bytes) else m)
        return str(p)

    # ---- .npy files ----

    def npy_header(self, descr="'<f4'", fortran="False", shape="(1, 8)", magic=b"\x93NUMPY", version=(1, 0),
                   header=None, pad=True):
        h = header if header is not None else "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
        h = h.encode("latin1")
        lenfmt = "<H" if version[0] == 1 else "<I"
        pre = len(magic) + 2 + struct.calcsize(lenfmt)
        if pad:
            total = (pre + len(h) + 1 + 63) // 64 * 64
            h = h + b" " * (total - pre - len(h) - 1) + b"\n"
        return magic + bytes(version) + struct.pack(lenfmt, len(h)) + h

    # ---- random mutations ----

    def control_flow(self):
        """If, Loop and Scan (expanded on import): a Loop whose body reads an outer weight and
        holds an If on an outer flag, then a Scan over the loop's scan output; mutations reach
        the bodies (mutate_proto picks a subgraph too)."""
        vi = self.vi
        then = helper.make_graph([helper.make_node("Relu", ["h"], ["t"])], "then", [], [vi("t", [2])])
        other = helper.make_graph([helper.make_node("Neg", ["h"], ["e"])], "else", [], [vi("e", [2])])
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Mul", ["v", "w"], ["h"]),
             helper.make_node("If", ["flag"], ["v2"], then_branch=then, else_branch=other),
             helper.make_node("Identity", ["v2"], ["out"])],
            "body", [vi("i", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL), vi("v", [2])],
            [vi("c2", [], TensorProto.BOOL), vi("v2", [2]), vi("out", [2])])
        step = helper.make_graph([helper.make_node("Add", ["s", "r"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"])],
                                 "step", [vi("s", [2]), vi("r", [2])], [vi("s2", [2]), vi("o", [2])])
        inits = [numpy_helper.from_array(np.int64(3), "n"), numpy_helper.from_array(np.asarray(True), "flag"),
                 numpy_helper.from_array(np.array([0.5, -2], np.float32), "w")]
        nodes = [helper.make_node("Loop", ["n", "", "x"], ["last", "seq"], body=body),
                 helper.make_node("Scan", ["last", "seq"], ["y", "z"], body=step, num_scan_inputs=1,
                                  scan_input_directions=[1])]
        return self.model(nodes, [vi("x", [2])], [vi("y", [2]), vi("z", [3, 2])], inits, name="control_flow")

    def mutate_proto(self, m: onnx.ModelProto, rng: random.Random) -> str:
        """One structured mutation of a model (or of one of its If, Loop or Scan bodies), in place;
        returns what it did."""
        graphs, todo = [m.graph], [m.graph]
        while todo:
            for n in todo.pop().node:
                for a in n.attribute:
                    if a.HasField("g"):
                        graphs.append(a.g)
                        todo.append(a.g)
        g = rng.choice(graphs) if rng.random() < 0.5 else m.graph
        choice = rng.randrange(12)
        huge = rng.choice([0, -1, -(1 << 62), 1 << 31, 1 << 32, (1 << 62), (1 << 63) - 1, 3, 1 << 20])
        if choice == 0 and len(g.initializer):
            t = rng.choice(g.initializer)
            if len(t.dims):
                i = rng.randrange(len(t.dims))
                t.dims[i] = huge
                return f"initializer {t.name} dim {i} = {huge}"
        if choice == 1 and len(g.initializer):
            t = rng.choice(g.initializer)
            t.data_type = rng.randrange(0, 26)
            return f"initializer {t.name} data_type = {t.data_type}"
        if choice == 2 and len(g.initializer):
            t = rng.choice(g.initializer)
            raw = t.raw_data
            t.raw_data = raw[: rng.randrange(len(raw) + 1)] if raw and rng.random() < 0.5 else raw + b"\0" * rng.randrange(1, 64)
            return f"initializer {t.name} raw_data resized to {len(t.raw_data)}"
        if choice == 3 and len(g.initializer):
            t = rng.choice(g.initializer)
            t.data_location = TensorProto.EXTERNAL
            del t.external_data[:]
            for k, v in (("location", rng.choice(["weights.bin", "../sentinel.txt", "/etc/passwd", "link.bin", "", ".",
                                                  "/dev/zero", "sub/../../sentinel.txt", "up/sentinel.txt"])),
                         ("offset", rng.choice(["0", "64", "-1", "abc", "1" * 25, str(1 << 63)])),
                         ("length", rng.choice([str(len(t.raw_data) or 64), "0", "-5", "1" * 23, "3221225472"]))):
                if rng.random() < 0.85:
                    e = t.external_data.add()
                    e.key, e.value = k, v
            t.ClearField("raw_data")
            return f"initializer {t.name} external {[(e.key, e.value) for e in t.external_data]}"
        if choice == 4 and len(g.input):
            vi = rng.choice(g.input)
            dims = vi.type.tensor_type.shape.dim
            if len(dims):
                d = rng.choice(dims)
                if rng.random() < 0.2:
                    d.dim_param = "batch"
                else:
                    d.dim_value = huge
                return f"input {vi.name} dim = {huge}"
        if choice == 5 and len(g.node):
            n = rng.choice(g.node)
            if len(n.attribute):
                a = rng.choice(n.attribute)
                if a.ints:
                    a.ints[rng.randrange(len(a.ints))] = huge
                elif a.type == onnx.AttributeProto.INT:
                    a.i = huge
                elif a.type == onnx.AttributeProto.FLOAT:
                    a.f = rng.choice([float("nan"), float("inf"), -1e38, 0.0])
                return f"node {n.op_type} attribute {a.name} = {huge}"
            n.attribute.append(helper.make_attribute(rng.choice(["axis", "pads", "kernel_shape", "perm", "strides"]),
                                                     rng.choice([huge, [huge, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1]])))
            return f"node {n.op_type} attribute added"
        if choice == 6 and len(g.node):
            n = rng.choice(g.node)
            if len(n.input) and rng.random() < 0.5:
                n.input[rng.randrange(len(n.input))] = rng.choice(["", "nosuch", n.output[0] if len(n.output) else "y"])
            else:
                n.input.append(rng.choice(["x", "", "W"]))
            return f"node {n.op_type} inputs = {list(n.input)}"
        if choice == 7 and len(g.node):
            n = rng.choice(g.node)
            n.op_type = rng.choice(["Conv", "MatMul", "Gather", "Slice", "Reshape", "Expand", "Concat", "Split", "Transpose",
                                    "Softmax", "Where", "Pow", "ReduceSum", "MaxPool", "Squeeze", "Unsqueeze", "Loop", ""])
            return f"node op_type = {n.op_type}"
        if choice == 8:
            del m.opset_import[:]
            if rng.random() < 0.7:
                m.opset_import.append(helper.make_opsetid(rng.choice(["", "ai.onnx", "com.microsoft"]),
                                                          rng.choice([1, 12, 13, 21, 22, 1 << 40, -1])))
            m.ir_version = rng.choice([0, -1, 3, 8, 11, 1 << 40])
            return "opset/ir_version"
        if choice == 9 and len(g.initializer):
            t = rng.choice(g.initializer)
            vals = rng.choice([[huge] * 4, [0], [-1, 1 << 62], []])
            if t.data_type == TensorProto.INT64:
                t.ClearField("raw_data")
                del t.int64_data[:]
                t.int64_data.extend(vals)
                return f"initializer {t.name} int64_data = {vals}"
        if choice == 10 and len(g.initializer):
            t = rng.choice(g.initializer)
            del t.dims[:]
            t.dims.extend(rng.choice([[], [0], [1 << 30, 1 << 30, 4], [1 << 31], [-1], [2, -3]]))
            return f"initializer {t.name} dims = {list(t.dims)}"
        if len(g.node) > 1:
            del g.node[rng.randrange(len(g.node))]
            return "node removed"
        return "none"

    # ---- the seed corpus ----

    def write_corpus(self, d: Path):
        """Small valid models (and a few external-data ones) as libFuzzer's seed corpus."""
        d.mkdir(parents=True, exist_ok=True)
        models = {"mlp": self.mlp(), "conv": self.conv(), "conv_opset9": self.conv_opset9(), "shapes": self.shapes(),
                  "gemm_norm": self.gemm_norm(), "narrow": self.narrow(),
                  "control_flow": self.control_flow(), "ext": self.external_valid(), "ext_offset": self.external_valid(offset=128),
                  "ext_sentinel": self.external([("location", "outside.bin"), ("length", 64)]),
                  "ext_dotdot": self.external([("location", "../sentinel.txt"), ("length", 64)]),
                  "wrap": self.model([helper.make_node("Slice", ["W_big", "st", "en", "ax"], ["y"])], [],
                                     [self.vi("y", None)],
                                     [self.big_tensor("W_big", [1 << 30, 1 << 30, 4]),
                                      *(numpy_helper.from_array(np.array([v], np.int64), n)
                                        for v, n in ((0, "st"), (1, "en"), (0, "ax")))])}
        for name, m in models.items():
            (d / f"{name}.onnx").write_bytes(m.SerializeToString())
        print(f"wrote {len(models)} models to {d}")
