"""The C++ schedule goldens (tests/golden/schedule/*.txt), reproduced through the Python API.

Each test replays, call for call, the C++ test that writes the golden (named in its docstring)
and compares ``str(sch.func)`` with the file byte for byte. Where that C++ test also asserts a
refusal in the same scenario, the test asserts the same ``tyche.ScheduleError`` code.

Every golden file of tests/golden/schedule/ has a test here; none is skipped:
  - the per_primitive_* goldens concatenate one result per primitive (IR or "refused: code:
    reason"), built here exactly as tests/schedule/per_primitive_golden_test.cc builds them;
  - trace_seed42_json is the trace's JSON (not IR): reachable from Python with the same seed and
    calls, so it is compared too.
"""

import pytest

import tyche


def small(name):
    """testing::small(name) of tests/schedule/schedule_test_util.h: the preset, scaled down."""
    return tyche.workload(name, scale_down=True)


def schedule(name):
    """Schedule sch(small(name).func, /*debug_verify=*/true)."""
    w = small(name)
    return w, tyche.Schedule(w, debug_verify=True)


def loops_of(sch, block_name):
    return sch.get_loops(sch.get_block(block_name))


def refused(code, call, *args):
    """``call(*args)`` raises ScheduleError with ``code``; returns the exception."""
    with pytest.raises(tyche.ScheduleError) as info:
        call(*args)
    assert info.value.code == code, str(info.value)
    return info.value


def tile_matmul(sch, block_name):
    """tile_matmul() of blockize_tensorize_test.cc: the last three loops split by 4, the 4s
    innermost; returns (outer loops...), i_0, j_0, k_0, i_1, j_1, k_1."""
    loops = loops_of(sch, block_name)
    first = len(loops) - 3
    i = sch.split(loops[first], [None, 4])
    j = sch.split(loops[first + 1], [None, 4])
    k = sch.split(loops[first + 2], [None, 4])
    sch.reorder(i[0], j[0], k[0], i[1], j[1], k[1])
    return list(loops[:first]) + [i[0], j[0], k[0], i[1], j[1], k[1]]


# ---- loop_primitives_test.cc ----

def test_split_gmm(golden):
    """Split.PerfectAndInferredFactors"""
    _, sch = schedule("GMM-1")
    loops = loops_of(sch, "Z")
    assert len(sch.split(loops[1], [4, None])) == 2
    assert len(sch.split(loops[3], [None, 2, 4])) == 3
    assert str(sch.func) == golden("split_gmm")


def test_fuse_gmm(golden):
    """Fuse.AdjacentLoops"""
    _, sch = schedule("GMM-1")
    loops = loops_of(sch, "Z")
    sch.fuse(loops[1], loops[2])
    assert str(sch.func) == golden("fuse_gmm")


def test_reorder_gmm(golden):
    """Reorder.PermutesAChain"""
    _, sch = schedule("GMM-1")
    loops = loops_of(sch, "Z")
    i = sch.split(loops[1], [4, 8])
    j = sch.split(loops[2], [4, 8])
    sch.reorder(i[0], j[0], loops[3], i[1], j[1])
    assert str(sch.func) == golden("reorder_gmm")
    sch.vectorize(j[1])  # handles survive a reorder


def test_loop_kinds_c2d(golden):
    """LoopKinds.ParallelVectorizeUnrollBind"""
    _, sch = schedule("C2D-1")
    loops = loops_of(sch, "conv2d")
    sch.parallel(loops[1])
    sch.vectorize(loops[3])
    sch.unroll(loops[4])  # unrolling a reduction loop is fine
    assert str(sch.func) == golden("loop_kinds_c2d")
    refused("invalid_loop_kind", sch.parallel, loops[6])  # reduction loop
    refused("invalid_loop_kind", sch.vectorize, loops[5])
    refused("unknown_name", sch.bind, loops[2], "threadIdx.w")
    sch.bind(loops[2], "threadIdx.x")


# ---- cache_test.cc ----

def test_cache_read_gmm(golden):
    """CacheRead.GmmSharedInputs"""
    _, sch = schedule("GMM-1")
    z = sch.get_block("Z")
    xs = sch.cache_read(z, 0, "shared")
    ys = sch.cache_read(z, 1, "shared")
    assert (sch.block_name(xs), sch.block_name(ys)) == ("X_shared", "Y_shared")
    assert str(sch.func) == golden("cache_read_gmm")


def test_cache_read_c2d(golden):
    """CacheRead.C2DPadAfterItsProducer"""
    _, sch = schedule("C2D-1")
    ps = sch.cache_read(sch.get_block("conv2d"), 0, "shared")
    assert sch.block_name(ps) == "pad_shared"
    assert str(sch.func) == golden("cache_read_c2d")


def test_cache_write_gmm(golden):
    """CacheWrite.GmmLocalAccumulator"""
    _, sch = schedule("GMM-1")
    zl = sch.cache_write(sch.get_block("Z"), 0, "local")
    assert sch.block_name(zl) == "Z_local"
    assert str(sch.func) == golden("cache_write_gmm")


def test_cache_write_sfm(golden):
    """CacheWrite.SoftmaxRowSum"""
    _, sch = schedule("SFM-1")
    c = sch.cache_write(sch.get_block("row_sum"), 0, "local")
    assert sch.block_name(c) == "row_sum_local"
    assert str(sch.func) == golden("cache_write_sfm")


def test_set_scope_cbr(golden):
    """SetScope.CbrConvToLocal"""
    _, sch = schedule("CBR-1")
    conv = sch.get_block("conv2d")
    sch.set_scope(conv, 0, "local")
    text = str(sch.func)
    assert text == golden("set_scope_cbr")
    sch.set_scope(conv, 0, "local")  # the same scope again: nothing to do
    assert str(sch.func) == text


def test_storage_align_cbr(golden):
    """StorageAlign.CbrPadStrides"""
    _, sch = schedule("CBR-1")
    sch.storage_align(sch.get_block("pad"), 0, 2, 8, 1)
    assert str(sch.func) == golden("storage_align_cbr")


def test_transform_layout_gmm(golden):
    """TransformLayout.PacksACachedPanel"""
    _, sch = schedule("GMM-1")
    z = sch.get_block("Z")
    yc = sch.cache_read(z, 1, "global")
    loops = sch.get_loops(z)
    sch.compute_at(yc, loops[1], True)
    sch.transform_layout(yc, 0, "lambda b, k, j: (j // 8, b, k, j % 8)")
    assert str(sch.func) == golden("transform_layout_gmm")


# ---- compute_at_test.cc ----

def test_compute_at_c2d(golden):
    """ComputeAt.C2dPadUnderSplitConvLoop"""
    _, sch = schedule("C2D-1")
    h = sch.split(loops_of(sch, "conv2d")[1], [None, 3])
    pad = sch.get_block("pad")
    sch.compute_at(pad, h[0])
    assert str(sch.func) == golden("compute_at_c2d")
    assert len(sch.get_loops(pad)) == 5


def test_compute_at_cbr(golden):
    """ComputeAt.CbrConvAndPadUnderBiasAdd"""
    _, sch = schedule("CBR-2")
    wl = loops_of(sch, "bias_add")[2]
    sch.compute_at(sch.get_block("conv2d"), wl)
    sch.compute_at(sch.get_block("pad"), wl)
    assert str(sch.func) == golden("compute_at_cbr")


def test_compute_at_sfm(golden):
    """ComputeAt.SoftmaxChainUnderOuterLoop"""
    _, sch = schedule("SFM-1")
    i = loops_of(sch, "softmax")[0]
    for name in ("row_sum", "row_exp", "row_max"):
        sch.compute_at(sch.get_block(name), i)
    assert str(sch.func) == golden("compute_at_sfm")


def test_compute_at_dense_relu_reverse(golden):
    """ReverseComputeAt.DenseReluUnderRowLoop"""
    _, sch = schedule("DENSE_RELU-1")
    c = sch.get_block("C")
    sch.reverse_compute_at(c, loops_of(sch, "dense")[0])
    assert str(sch.func) == golden("compute_at_dense_relu_reverse")
    assert len(sch.get_loops(c)) == 2


def test_compute_at_cbr_reverse(golden):
    """ReverseComputeAt.CbrEpilogueUnderConvLoops"""
    _, sch = schedule("CBR-2")
    wl = loops_of(sch, "conv2d")[2]
    for name in ("bias_add", "bn_mul", "bn_add", "relu"):
        sch.reverse_compute_at(sch.get_block(name), wl)
    assert str(sch.func) == golden("compute_at_cbr_reverse")


# ---- compute_inline_test.cc ----

def test_compute_inline_c2d(golden):
    """ComputeInline.PadIntoConv2d"""
    _, sch = schedule("C2D-1")
    pad = sch.get_block("pad")
    conv = sch.get_block("conv2d")
    sch.compute_inline(pad)
    assert str(sch.func) == golden("compute_inline_c2d")
    refused("stale_handle", sch.get_loops, pad)
    refused("stale_handle", sch.compute_inline, pad)
    assert len(sch.get_loops(conv)) == 7
    refused("unknown_block", sch.get_block, "pad")


def test_compute_inline_cbr(golden):
    """ComputeInline.BatchNormChain"""
    _, sch = schedule("CBR-1")
    relu = sch.get_block("relu")
    for name in ("bias_add", "bn_mul", "bn_add"):
        sch.compute_inline(sch.get_block(name))
    assert str(sch.func) == golden("compute_inline_cbr")
    refused("is_reduction", sch.reverse_compute_inline, relu)


def test_compute_inline_cbr_reverse(golden):
    """ReverseComputeInline.ReluIntoBatchNorm"""
    _, sch = schedule("CBR-1")
    bn_add = sch.get_block("bn_add")
    relu = sch.get_block("relu")
    sch.compute_inline(sch.get_block("bias_add"))
    sch.compute_inline(sch.get_block("bn_mul"))
    sch.reverse_compute_inline(relu)
    text = str(sch.func)
    assert text == golden("compute_inline_cbr_reverse")
    refused("stale_handle", sch.get_loops, relu)
    e = refused("is_output", sch.compute_inline, bn_add)
    assert str(e) == "cannot inline block 'bn_add': it writes the output 'relu'"
    assert str(sch.func) == text  # a refusal changes nothing


def test_compute_inline_sfm(golden):
    """ComputeInline.ExpIntoBothConsumers"""
    _, sch = schedule("SFM-1")
    row_sum = sch.get_block("row_sum")
    sch.compute_inline(sch.get_block("row_exp"))
    assert str(sch.func) == golden("compute_inline_sfm")
    refused("is_reduction", sch.compute_inline, row_sum)
    e = refused("not_complete", sch.reverse_compute_inline, sch.get_block("softmax"))
    assert "exactly one producer" in str(e)


def test_compute_inline_tbg(golden):
    """ComputeInline.TransposesIntoBatchMatmul"""
    _, sch = schedule("TBG-1")
    sch.compute_inline(sch.get_block("Q_t"))
    sch.compute_inline(sch.get_block("K_t"))
    assert str(sch.func) == golden("compute_inline_tbg")


# ---- blockize_tensorize_test.cc ----

def test_blockize_gmm(golden):
    """Blockize.TiledMatmulMovesInitOut"""
    _, sch = schedule("GMM-1")
    z = sch.get_block("Z")
    loops = tile_matmul(sch, "Z")  # b, i_0, j_0, k_0, i_1, j_1, k_1
    outer = sch.blockize(loops[4])
    assert (sch.block_name(outer), sch.block_name(z)) == ("Z_o", "Z")
    assert len(sch.get_child_blocks(outer)) == 2  # Z_init, Z
    assert str(sch.func) == golden("blockize_gmm")


def test_blockize_sfm_row_exp(golden):
    """Blockize.ElementwiseAndDense (its SFM half)"""
    _, sch = schedule("SFM-1")
    loops = loops_of(sch, "row_exp")
    j = sch.split(loops[1], [None, 4])
    assert sch.block_name(sch.blockize(j[1])) == "row_exp_o"
    assert str(sch.func) == golden("blockize_sfm_row_exp")


def test_tensorize_gmm(golden):
    """Tensorize.TiledMatmul"""
    _, sch = schedule("GMM-1")
    z = sch.get_block("Z")
    loops = tile_matmul(sch, "Z")
    sch.tensorize(loops[4], "dot_4x4x4_f32")
    assert str(sch.func) == golden("tensorize_gmm")
    # The computation under the loop is gone: its block and loops are stale.
    refused("stale_handle", sch.get_loops, z)
    refused("stale_handle", sch.blockize, loops[4])
    assert sch.block_name(sch.get_block("Z_o")) == "Z_o"


# ---- reduction_test.cc ----

def test_reduction_decompose_gmm_i(golden):
    """DecomposeReduction.GmmAtOuterSpatialLoop"""
    _, sch = schedule("GMM-1")
    z = sch.get_block("Z")
    loops = sch.get_loops(z)
    sch.split(loops[3], [None, 4])
    init = sch.decompose_reduction(z, loops[1])
    assert (sch.block_name(init), sch.block_name(z)) == ("Z_init", "Z")
    assert str(sch.func) == golden("reduction_decompose_gmm_i")
    sch.parallel(loops[1])


def test_reduction_decompose_gmm_k(golden):
    """DecomposeReduction.GmmAtReductionLoop"""
    _, sch = schedule("GMM-1")
    z = sch.get_block("Z")
    k = sch.split(sch.get_loops(z)[3], [None, 4])
    init = sch.decompose_reduction(z, k[0])
    assert str(sch.func) == golden("reduction_decompose_gmm_k")
    assert len(sch.get_loops(init)) == 3


def test_reduction_decompose_c2d_co(golden):
    """DecomposeReduction.C2dAtOutputChannelLoop"""
    _, sch = schedule("C2D-1")
    conv = sch.get_block("conv2d")
    init = sch.decompose_reduction(conv, sch.get_loops(conv)[3])  # n h w co rh rw rc
    assert len(sch.get_loops(init)) == 4
    assert str(sch.func) == golden("reduction_decompose_c2d_co")


def test_reduction_rfactor_nrm(golden):
    """RFactor.NormOverASplitReduction"""
    _, sch = schedule("NRM-1")
    total = sch.get_block("sum_sq")
    rj = sch.split(sch.get_loops(total)[2], [None, 8])
    rf = sch.rfactor(rj[1], 0)
    assert (sch.block_name(rf), sch.block_name(total)) == ("sum_sq_rf", "sum_sq")
    assert str(sch.func) == golden("reduction_rfactor_nrm")
    assert len(sch.get_loops(rf)) == 4


def test_reduction_rfactor_sfm(golden):
    """RFactor.SoftmaxMaxAndSum"""
    _, sch = schedule("SFM-1")
    k = sch.split(loops_of(sch, "row_max")[1], [None, 8])
    max_rf = sch.rfactor(k[1], 1)
    sum_rf = sch.rfactor(loops_of(sch, "row_sum")[1], 0)
    assert (sch.block_name(max_rf), sch.block_name(sum_rf)) == ("row_max_rf", "row_sum_rf")
    assert str(sch.func) == golden("reduction_rfactor_sfm")


def rfactor_dense(factor_axis):
    """RFactor.DenseFactorAxisFirstAndLast, for one factor axis."""
    _, sch = schedule("DENSE_RELU-1")
    k = sch.split(loops_of(sch, "dense")[2], [None, 4])
    sch.rfactor(k[0], factor_axis)
    return str(sch.func)


def test_reduction_rfactor_dense_axis0(golden):
    """RFactor.DenseFactorAxisFirstAndLast (factor_axis 0)"""
    assert rfactor_dense(0) == golden("reduction_rfactor_dense_axis0")


def test_reduction_rfactor_dense_axis_last(golden):
    """RFactor.DenseFactorAxisFirstAndLast (factor_axis -1)"""
    assert rfactor_dense(-1) == golden("reduction_rfactor_dense_axis_last")


# ---- per_primitive_golden_test.cc ----
# One schedule per primitive from the unscheduled program; the golden concatenates "### name"
# and either the IR or "refused: <code>: <reason>". Roles: a reduction block, a complete
# intermediate block (or None), a consumer (or None).

def _target(r):
    return r["spatial"] or r["reduction"]


def _transform_layout(s, r):
    block = s.get_block(_target(r))
    rank = len(s.block_buffers(block)["writes"][0][1])
    ins = ", ".join(f"a{d}" for d in range(rank))
    outs = ", ".join(f"a{rank - 1 - d}" for d in range(rank))
    s.transform_layout(block, 0, f"lambda {ins}: ({outs},)")


def _compute_at(s, r):
    if not r["consumer"]:
        return s.compute_at(s.get_block(r["reduction"]), loops_of(s, r["reduction"])[0])
    return s.compute_at(s.get_block(_target(r)), loops_of(s, r["consumer"])[0])


def _reverse_compute_at(s, r):
    if not r["consumer"]:
        return s.reverse_compute_at(s.get_block(r["reduction"]), loops_of(s, r["reduction"])[0])
    return s.reverse_compute_at(s.get_block(r["consumer"]), loops_of(s, _target(r))[0])


def _annotate(s, r):
    s.annotate(loops_of(s, r["reduction"])[0], "pragma_auto_unroll_max_step", 16)
    s.annotate(s.get_block(r["reduction"]), "schedule_rule", "none")


STEPS = [
    ("split", lambda s, r: s.split(loops_of(s, r["reduction"])[-1], [None, 4])),
    ("fuse", lambda s, r: s.fuse(*loops_of(s, r["reduction"])[:2])),
    ("reorder", lambda s, r: s.reorder(loops_of(s, r["reduction"])[-1], loops_of(s, r["reduction"])[-2])),
    ("add_unit_loop", lambda s, r: s.add_unit_loop(s.get_block(r["reduction"]))),
    ("parallel", lambda s, r: s.parallel(loops_of(s, r["reduction"])[0])),
    ("vectorize", lambda s, r: s.vectorize(loops_of(s, _target(r))[-1])),
    ("unroll", lambda s, r: s.unroll(loops_of(s, r["reduction"])[-1])),
    ("bind", lambda s, r: s.bind(loops_of(s, r["reduction"])[0], "blockIdx.x")),
    ("annotate", _annotate),
    ("compute_at", _compute_at),
    ("reverse_compute_at", _reverse_compute_at),
    ("compute_inline", lambda s, r: s.compute_inline(s.get_block(_target(r)))),
    ("reverse_compute_inline", lambda s, r: s.reverse_compute_inline(s.get_block(r["consumer"] or r["reduction"]))),
    ("cache_read", lambda s, r: s.cache_read(s.get_block(r["reduction"]), 0, "shared")),
    ("cache_write", lambda s, r: s.cache_write(s.get_block(r["reduction"]), 0, "local")),
    ("set_scope", lambda s, r: s.set_scope(s.get_block(_target(r)), 0, "shared")),
    ("storage_align", lambda s, r: s.storage_align(s.get_block(_target(r)), 0, 0, 8, 1)),
    ("transform_layout", _transform_layout),
    ("pad_einsum", lambda s, r: s.pad_einsum(s.get_block(r["reduction"]), [3] * len(loops_of(s, r["reduction"])))),
    ("decompose_reduction",
     lambda s, r: s.decompose_reduction(s.get_block(r["reduction"]), loops_of(s, r["reduction"])[0])),
    ("rfactor", lambda s, r: s.rfactor(loops_of(s, r["reduction"])[-1], 0)),
    ("blockize", lambda s, r: s.blockize(loops_of(s, r["reduction"])[-1])),
    ("tensorize", lambda s, r: s.tensorize(loops_of(s, r["reduction"])[-1], "dot_4x4x4_f32")),
]


def per_primitive(preset, reduction, spatial, consumer):
    """run_all() of per_primitive_golden_test.cc."""
    roles = {"reduction": reduction, "spatial": spatial, "consumer": consumer}
    w = small(preset)
    text = ""
    for name, step in STEPS:
        sch = tyche.Schedule(w, debug_verify=True)
        text += f"### {name}\n"
        try:
            step(sch, roles)
        except tyche.ScheduleError as e:
            text += f"refused: {e.code}: {e}\n"
            assert str(sch.func) == str(w.func), f"{name} refused but changed the program"
            continue
        text += str(sch.func)
    return text


def test_per_primitive_gmm(golden):
    """PerPrimitiveGolden.GMM"""
    assert per_primitive("GMM-1", "Z", None, None) == golden("per_primitive_gmm")


def test_per_primitive_c2d(golden):
    """PerPrimitiveGolden.C2D"""
    assert per_primitive("C2D-1", "conv2d", "pad", "conv2d") == golden("per_primitive_c2d")


def test_per_primitive_sfm(golden):
    """PerPrimitiveGolden.SFM"""
    assert per_primitive("SFM-1", "row_sum", "row_exp", "softmax") == golden("per_primitive_sfm")


def test_per_primitive_sfm_row_max(golden):
    """PerPrimitiveGolden.SFMRowMax"""
    assert per_primitive("SFM-1", "row_max", None, "row_exp") == golden("per_primitive_sfm_row_max")


# ---- trace_test.cc ----

def test_trace_seed42_json(golden):
    """TraceDeterminism.SeededTraceMatchesGoldenJson: the trace JSON (not IR) of a seeded schedule."""
    sch = tyche.Schedule(small("GMM-1"), seed=42)
    z = sch.get_block("Z")  # tile_all()
    loops = sch.get_loops(z)
    for d in (1, 2, 3):
        t = sch.sample_perfect_tile(loops[d], 2, 16)
        sch.split(loops[d], [t[0], t[1]])
    sch.sample_categorical([0, 16, 64, 512], [0.1, 0.2, 0.3, 0.4])
    sch.sample_compute_location(sch.get_block("Z"))
    assert sch.trace.to_json(1) + "\n" == golden("trace_seed42_json")
