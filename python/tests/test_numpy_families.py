"""Independent numpy implementations of the 14 operator families of docs/workloads.md.

For every family's preset 1, scaled down, the test checks that
  (a) the numpy implementation equals the workload's native (C++) reference, and
  (b) the kernel Tyche compiles equals the numpy implementation.
The numpy code reads its sizes from `w.shape` ("N=1,H=12,...") and works in float64; it pads
explicitly and loops only over kernel offsets (or groups), never over output elements.
"""
import numpy as np
import pytest

import tyche

RTOL = ATOL = 1e-4


def out_size(n, k, stride, pad, dilation=1):
    """(in + 2·pad − dilation·(K−1) − 1) // stride + 1, the output extent of docs/workloads.md."""
    return (n + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def pad_spatial(x, nspatial, pad):
    """Zero-pads dims 1..nspatial of a channels-last array by `pad` on both sides."""
    return np.pad(x, [(0, 0)] + [(pad, pad)] * nspatial + [(0, 0)] * (x.ndim - 1 - nspatial))


def windows(x, nspatial, k, stride, pad, dilation=1):
    """Yields (kernel offset, x_padded[:, o0*d + s*i0, o1*d + s*i1, ..., ...]) for every offset."""
    outs = [out_size(n, k, stride, pad, dilation) for n in x.shape[1:1 + nspatial]]
    xp = pad_spatial(x, nspatial, pad)
    for off in np.ndindex(*([k] * nspatial)):
        idx = tuple(slice(o * dilation, o * dilation + stride * (m - 1) + 1, stride) for o, m in zip(off, outs))
        yield off, xp[(slice(None),) + idx]


def conv(x, w, nspatial, stride, pad, dilation=1, groups=1):
    """O[n,*y,co] = Σ_{r,rc} Xpad[n, *(y·s + r·d), g(co)·CI/G + rc] · W[*r, rc, co], g(co) = co // (CO/G)."""
    cig, co = w.shape[-2], w.shape[-1]
    out = 0.0
    for off, xs in windows(x, nspatial, w.shape[0], stride, pad, dilation):
        xg = xs.reshape(xs.shape[:-1] + (groups, cig))             # channel = g·CI/G + rc
        wg = w[off].reshape(cig, groups, co // groups)             # out channel = g·CO/G + j
        out = out + np.einsum("...gc,cgj->...gj", xg, wg).reshape(xs.shape[:-1] + (co,))
    return out


def gmm(p, x, y):
    """Z[b,i,j] = Σk X[b,i,k]·Y[b,k,j]."""
    return np.einsum("bik,bkj->bij", x, y)


def c1d(p, x, w):
    """O[n,l,co] = Σ_{r,ci} Xpad[n, l·s + r, ci] · W[r, ci, co]."""
    return conv(x, w, 1, p["stride"], p["pad"])


def c2d(p, x, w):
    """O[n,h,w,co] = Σ_{rh,rw,ci} Xpad[n, h·s + rh, w·s + rw, ci] · W[rh, rw, ci, co]."""
    return conv(x, w, 2, p["stride"], p["pad"])


def c3d(p, x, w):
    """O[n,d,h,w,co] = Σ_{rd,rh,rw,ci} Xpad[n, d·s + rd, h·s + rh, w·s + rw, ci] · W[rd, rh, rw, ci, co]."""
    return conv(x, w, 3, p["stride"], p["pad"])


def grp(p, x, w):
    """O[n,h,w,co] = Σ_{rh,rw,rc} Xpad[n, h·s + rh, w·s + rw, (co // (CO/4))·(CI/4) + rc] · W[rh, rw, rc, co]."""
    return conv(x, w, 2, p["stride"], p["pad"], groups=4)


def dil(p, x, w):
    """O[n,h,w,co] = Σ_{rh,rw,ci} Xpad[n, h·s + 2·rh, w·s + 2·rw, ci] · W[rh, rw, ci, co]."""
    return conv(x, w, 2, p["stride"], p["pad"], dilation=2)


def dep(p, x, w):
    """O[n,h,w,c] = Σ_{rh,rw} Xpad[n, h·s + rh, w·s + rw, c] · W[0, rh, rw, c]."""
    out = 0.0
    for (rh, rw), xs in windows(x, 2, p["K"], p["stride"], p["pad"]):
        out = out + xs * w[0, rh, rw]
    return out


def t2d(p, x, w):
    """O[n, h·s + kh − pad, w·s + kw − pad, co] += X[n,h,w,ci] · W[kh,kw,ci,co] (scatter), OH = (H−1)·s − 2·pad + K."""
    k, s, pad = p["K"], p["stride"], p["pad"]
    n, h, wd, _ = x.shape
    full = np.zeros((n, (h - 1) * s + k, (wd - 1) * s + k, w.shape[-1]))
    for kh, kw in np.ndindex(k, k):
        full[:, kh:kh + (h - 1) * s + 1:s, kw:kw + (wd - 1) * s + 1:s] += np.einsum("nhwc,co->nhwo", x, w[kh, kw])
    oh, ow = (h - 1) * s - 2 * pad + k, (wd - 1) * s - 2 * pad + k
    return full[:, pad:pad + oh, pad:pad + ow]


def cap(p, x, w):
    """O[n,h,w,i,j,co] = Σ_{rh,rw,k,rc} Xpad[n, h·s + rh, w·s + rw, i, k, rc] · W[rh, rw, k, j, rc, co]."""
    out = 0.0
    for (rh, rw), xs in windows(x, 2, p["K"], p["stride"], p["pad"]):
        out = out + np.einsum("nhwikc,kjco->nhwijo", xs, w[rh, rw])
    return out


def nrm(p, a):
    """D[b] = sqrt(Σ_{i,j} A[b,i,j]²)."""
    return np.sqrt((a * a).sum(axis=(1, 2)))


def sfm(p, a):
    """O[i,j] = exp(A[i,j] − max_k A[i,k]) / Σ_k exp(A[i,k] − max_k A[i,k])."""
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cbr(p, x, w, bias, scale, offset):
    """O[n,h,w,co] = max((C2D(X, W)[n,h,w,co] + bias[co]) · scale[co] + offset[co], 0)."""
    return np.maximum((c2d(p, x, w) + bias) * scale + offset, 0.0)


def tbg(p, q, k):
    """C[b,h,i,j] = Σd Q[b,i,h,d] · K[b,j,h,d]."""
    return np.einsum("bihd,bjhd->bhij", q, k)


def dense_relu(p, a, b):
    """C[i,j] = max(Σk A[i,k] · B[k,j], 0)."""
    return np.maximum(a @ b, 0.0)


NUMPY = {
    "GMM": gmm, "C1D": c1d, "C2D": c2d, "C3D": c3d, "GRP": grp, "DIL": dil, "DEP": dep,
    "T2D": t2d, "CAP": cap, "NRM": nrm, "SFM": sfm, "CBR": cbr, "TBG": tbg, "DENSE_RELU": dense_relu,
}


def params_of(w):
    """{"N": 1, "H": 12, ...} from the workload's shape string "N=1,H=12,..."."""
    return {k: int(v) for k, v in (kv.split("=") for kv in w.shape.split(","))}


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def test_numpy_covers_every_op():
    assert sorted(NUMPY) == sorted(tyche.op_names())


@pytest.mark.parametrize("op", tyche.op_names())
def test_numpy_family(op):
    w = tyche.workload(f"{op}-1", scale_down=True)
    assert w.op == op
    inputs = w.inputs(seed=3)
    n_in = len(inputs)
    out_params = w.func.params[n_in:]
    assert [tuple(a.shape) for a in inputs] == [tuple(s) for _, s, _ in w.func.params[:n_in]]

    ours = NUMPY[op](params_of(w), *[a.astype(np.float64) for a in inputs])
    ours = np.asarray(ours, dtype=np.float32)
    assert len(out_params) == 1
    assert ours.shape == tuple(out_params[0][1]), f"{op} {w.shape}: numpy output shape"

    # (a) numpy == native reference
    expected = w.reference(*inputs)
    assert len(expected) == 1
    np.testing.assert_allclose(ours, expected[0], rtol=RTOL, atol=ATOL, err_msg=f"{op} {w.shape}: numpy vs reference")

    # (b) Tyche's compiled kernel == numpy
    got = as_list(tyche.build(w)(*inputs))
    assert len(got) == 1
    np.testing.assert_allclose(got[0], ours, rtol=RTOL, atol=ATOL, err_msg=f"{op} {w.shape}: kernel vs numpy")
