// ONNX's Attention (opsets 23-25) and RotaryEmbedding (23). Attention: softmax(Q K^T * scale +
// bias) V over heads, with grouped key/value heads, a past key/value cache, a boolean or additive
// mask, causal and sliding-window masking, softcap and the optional scores output. One node
// becomes one fused task: the scores, the softmax's row statistics and the product with V are
// stages of one function, and nothing the size of the scores is written but the scores themselves.
#include <cmath>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

// Q, K and V as (batch, heads, sequence, head size), whichever rank the model gave them in: a
// rank-3 input (batch, sequence, heads * head size) is read through its heads without a copy.
struct HeadView {
  const Tensor* x = nullptr;
  bool packed = false;  // rank 3
  int64_t heads = 0, seq = 0, size = 0;

  Expr operator()(Expr b, Expr h, Expr s, Expr d) const {
    if (!packed) return (*x)({b, h, s, d});
    return (*x)({b, s, h * const_i32(size) + d});
  }
};

HeadView head_view(ConvertContext& c, size_t i, int64_t heads, const char* what) {
  HeadView v{&c.input(i), c.rank(i) == 3};
  const std::vector<int64_t>& s = c.shape(i);
  if (v.packed) {
    if (heads < 1)
      c.fail(
          fmt::format("a rank-3 {} needs the number of heads (q_num_heads and "
                      "kv_num_heads)",
                      what));
    if (s[2] % heads)
      c.fail(
          fmt::format("the {}'s hidden size {} is not a multiple of {} heads", what, s[2], heads));
    v.heads = heads;
    v.seq = s[1];
    v.size = s[2] / heads;
  } else {
    if (c.rank(i) != 4) c.fail(fmt::format("the {} must have rank 3 or 4", what));
    v.heads = s[1];
    v.seq = s[2];
    v.size = s[3];
  }
  return v;
}

}  // namespace

std::vector<Tensor> attention(ConvertContext& c) {
  require_float(c);
  const Node& n = c.node();
  if (c.rank(1) != c.rank(0) || c.rank(2) != c.rank(0)) c.fail("Q, K and V differ in rank");
  if (c.rank(0) == 4 && (n.has("q_num_heads") || n.has("kv_num_heads")))
    c.fail("q_num_heads and kv_num_heads are for rank-3 inputs only");
  HeadView q = head_view(c, 0, n.get_int("q_num_heads", 0), "Q");
  int64_t kv_heads = n.get_int("kv_num_heads", 0);
  HeadView k = head_view(c, 1, kv_heads, "K"), v = head_view(c, 2, kv_heads, "V");
  int64_t batch = c.shape(0)[0];
  if (c.shape(1)[0] != batch || c.shape(2)[0] != batch) c.fail("Q, K and V differ in batch");
  if (k.size != q.size) c.fail("Q and K differ in head size");
  if (k.heads != v.heads || k.seq != v.seq) c.fail("K and V differ in heads or sequence");
  if (q.heads % k.heads) c.fail("the query heads are not a multiple of the key/value heads");
  int64_t group = q.heads / k.heads;
  DataType t = c.dtype(0);
  if (c.dtype(1) != t || c.dtype(2) != t) c.fail("Q, K and V differ in type");

  // The cache: present = concat(past, new) along the sequence.
  bool has_past = c.has_input(4) || c.has_input(5);
  if (has_past && !(c.has_input(4) && c.has_input(5)))
    c.fail("past_key and past_value come together");
  bool has_nonpad = c.has_input(6);
  if (has_past && has_nonpad) c.fail("nonpad_kv_seqlen cannot be combined with a past cache");
  int64_t past = 0;
  auto present = [&](const HeadView& now, size_t past_input, const char* what) -> Tensor {
    std::vector<int64_t> shape = {batch, now.heads, now.seq, now.size};
    if (has_past) {
      const std::vector<int64_t>& p = c.shape(past_input);
      if (p.size() != 4 || p[0] != batch || p[1] != now.heads || p[3] != now.size)
        c.fail(fmt::format("{} has shape {}, not (batch {}, heads {}, *, {})", what, shape_text(p),
                           batch, now.heads, now.size));
      past = p[2];
      shape[2] += p[2];
    }
    const Tensor& before = has_past ? c.input(past_input) : Tensor();
    return te::compute(
        shape,
        [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
          Expr s = i[2];
          if (!has_past) return now(i[0], i[1], s, i[3]);
          Expr from_past = s < const_i32(past);
          return te::if_then_else(from_past, before({i[0], i[1], s, i[3]}),
                                  now(i[0], i[1], s - const_i32(past), i[3]));
        },
        c.name(what));
  };
  bool want_present = n.outputs.size() > 2 && (n.outputs[1] >= 0 || n.outputs[2] >= 0);
  Tensor present_k, present_v;
  if (has_past || want_present) {
    present_k = present(k, 4, "present_key");
    present_v = present(v, 5, "present_value");
  }
  int64_t kv_len = k.seq + past, q_len = q.seq;
  // 16-bit floats are computed in float32 (as onnxruntime does) and the result rounded once.
  DataType at = t.bits() < 32 ? kFloat32 : t;
  auto widen = [&](Expr e) { return e.dtype() == at ? e : ir::cast(at, e); };
  auto query = [&](Expr b, Expr h, Expr s, Expr d) { return widen(q(b, h, s, d)); };
  auto key = [&](Expr b, Expr h, Expr l, Expr d) {
    Expr hk = group == 1 ? h : ir::floordiv(h, const_i32(group));
    return widen(has_past ? present_k({b, hk, l, d}) : k(b, hk, l, d));
  };
  auto value = [&](Expr b, Expr h, Expr l, Expr d) {
    Expr hk = group == 1 ? h : ir::floordiv(h, const_i32(group));
    return widen(has_past ? present_v({b, hk, l, d}) : v(b, hk, l, d));
  };

  double scale = n.get_float("scale", 1.0 / std::sqrt(static_cast<double>(q.size)));
  double softcap = n.get_float("softcap", 0);
  auto fconst = [&](double x) { return ir::make_const(at, x); };
  std::vector<int64_t> scores_shape = {batch, q.heads, q_len, kv_len};
  ir::IterVar rd = te::reduce_axis(q.size, "rd");
  Tensor scores = te::compute(
      scores_shape,
      [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
        return te::sum(query(i[0], i[1], i[2], rd.var) * key(i[0], i[1], i[3], rd.var), {rd});
      },
      c.name("attention_scores"));
  auto capped = [&](const std::vector<Expr>& i) {
    Expr s = scores(i) * fconst(scale);
    if (softcap > 0) s = ir::tanh(s / fconst(softcap)) * fconst(softcap);
    return s;
  };

  // The additive bias: 0 where a key is attended, -inf where it is masked, or the float mask.
  Expr neg_inf = ir::min_value(at), zero = fconst(0);
  bool has_mask = c.has_input(3);
  std::vector<int64_t> mask_shape = has_mask ? c.shape(3) : std::vector<int64_t>{};
  if (has_mask) {
    if (mask_shape.empty() || mask_shape.size() > 4) c.fail("the mask must have rank 1 to 4");
    if (mask_shape.back() > kv_len)
      c.fail(fmt::format("the mask covers {} keys, more than the {} there are", mask_shape.back(),
                         kv_len));
    if (!c.dtype(3).is_bool() && c.dtype(3) != t)
      c.fail(fmt::format("the mask must be bool or {}, not {}", t.str(), c.dtype(3).str()));
  }
  bool causal = n.get_int("is_causal", 0) != 0;
  int64_t left = n.get_int("left_window_size", -1), right = n.get_int("right_window_size", -1);
  if (left < -1 || right < -1) c.fail("a window size below -1");
  bool windowed = left >= 0 || right >= 0;
  if (has_nonpad && (c.rank(6) != 1 || c.shape(6)[0] != batch || !c.dtype(6).is_integer()))
    c.fail("nonpad_kv_seqlen must be one integer per batch");
  bool has_bias = has_mask || causal || windowed || has_nonpad;
  auto bias = [&](const std::vector<Expr>& i) -> Expr {
    Expr b = zero;
    if (has_mask) {
      std::vector<int64_t> full = {batch, q.heads, q_len, mask_shape.back()};
      Expr m = c.load(3, broadcast_index(mask_shape, i, full));
      m = c.dtype(3).is_bool() ? ir::select(m, zero, neg_inf) : widen(m);
      if (mask_shape.back() < kv_len)
        m = te::if_then_else(i[3] < const_i32(mask_shape.back()), m, neg_inf);
      b = m;
    }
    // Query s sits at s + offset among the keys: after the past, or before the padding.
    Expr offset = const_i32(past);
    if (has_nonpad) offset = ir::cast(kInt32, c.load(6, {i[0]})) - const_i32(q_len);
    Expr diff = i[2] + offset - i[3];
    Expr allowed = ir::make_bool(true);
    if (causal) allowed = allowed && diff >= Expr(0);
    if (left >= 0) allowed = allowed && diff <= const_i32(left);
    if (right >= 0) allowed = allowed && Expr(0) - diff <= const_i32(right);
    if (has_nonpad) allowed = allowed && i[3] < ir::cast(kInt32, c.load(6, {i[0]}));
    if (causal || windowed || has_nonpad) b = ir::select(allowed, b, neg_inf);
    return b;
  };
  std::vector<int64_t> row_shape = {batch, q.heads, q_len};
  auto row = [](const std::vector<ir::Var>& i, Expr l) {
    return std::vector<Expr>{i[0], i[1], i[2], std::move(l)};
  };
  // A row whose every key is masked attends nothing: its probabilities are 0, not NaN.
  Tensor bias_max;
  if (has_bias) {
    ir::IterVar rl = te::reduce_axis(kv_len, "rl");
    bias_max = te::compute(
        row_shape,
        [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
          return te::max(bias(row(i, rl.var)), {rl});
        },
        c.name("attention_bias_max"));
  }

  DataType st = at;  // the softmax's precision
  if (n.has("softmax_precision")) {
    std::optional<DataType> given = dtype_of_onnx(n.get_int("softmax_precision", 1));
    if (!given || !given->is_float()) c.fail("softmax_precision must be a float type");
    if (given->bits() > at.bits()) st = *given;
  }
  auto logits = [&](const std::vector<Expr>& i) {
    Expr x = has_bias ? capped(i) + bias(i) : capped(i);
    return st == at ? x : ir::cast(st, x);
  };
  ir::IterVar rm = te::reduce_axis(kv_len, "rm"), rs = te::reduce_axis(kv_len, "rs");
  Tensor row_max = te::compute(
      row_shape,
      [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
        return te::max(logits(row(i, rm.var)), {rm});
      },
      c.name("attention_max"));
  auto exp_shifted = [&](const std::vector<Expr>& i) {
    Expr m = row_max({i[0], i[1], i[2]});
    Expr safe = ir::select(m == ir::min_value(st), ir::make_const(st, 0), m);
    return ir::exp(logits(i) - safe);
  };
  Tensor row_sum = te::compute(
      row_shape,
      [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
        return te::sum(exp_shifted(row(i, rs.var)), {rs});
      },
      c.name("attention_sum"));
  Tensor probs = te::compute(
      scores_shape,
      [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
        std::vector<Expr> idx = exprs(i);
        Expr s = row_sum({i[0], i[1], i[2]});
        s = ir::select(s == ir::make_const(st, 0), ir::make_const(st, 1), s);
        Expr p = exp_shifted(idx) / s;
        if (st != at) p = ir::cast(at, p);
        if (has_bias) p = ir::select(bias_max({i[0], i[1], i[2]}) == neg_inf, zero, p);
        return p;
      },
      c.name("attention_probs"));

  ir::IterVar rv = te::reduce_axis(kv_len, "rv");
  Tensor y;
  if (q.packed) {
    y = te::compute(
        {batch, q_len, q.heads * v.size},
        [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
          Expr h = ir::floordiv(i[2], const_i32(v.size)), d = ir::floormod(i[2], const_i32(v.size));
          return te::sum(probs({i[0], h, i[1], rv.var}) * value(i[0], h, rv.var, d), {rv});
        },
        c.name("attention"));
  } else {
    y = te::compute(
        {batch, q.heads, q_len, v.size},
        [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
          return te::sum(probs({i[0], i[1], i[2], rv.var}) * value(i[0], i[1], rv.var, i[3]), {rv});
        },
        c.name("attention"));
  }

  auto narrowed = [&](const Tensor& wide, const char* name) {
    if (wide.dtype() == t) return wide;
    return te::compute(
        wide.shape(),
        [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
          return ir::cast(t, wide(exprs(i)));
        },
        c.name(name));
  };
  y = narrowed(y, "attention_out");
  std::vector<Tensor> outs = {y, present_k, present_v, Tensor()};
  if (n.outputs.size() > 3 && n.outputs[3] >= 0) {
    int64_t mode = n.get_int("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) c.fail(fmt::format("unknown qk_matmul_output_mode {}", mode));
    if (mode == 3) {
      outs[3] = narrowed(probs, "attention_qk");
    } else {
      outs[3] = te::compute(
          scores_shape,
          [&](const std::vector<ir::Var>& i) -> te::ComputeBody {
            std::vector<Expr> idx = exprs(i);
            Expr s = mode == 2 && has_bias ? capped(idx) + bias(idx) : capped(idx);
            return s.dtype() == t ? s : ir::cast(t, s);
          },
          c.name("attention_qk"));
    }
  }
  outs.resize(n.outputs.size());
  return outs;
}

}  // namespace tyche::graph::ops

namespace tyche::graph::ops {

// RotaryEmbedding (opset 23): each head's first rotary_embedding_dim values rotated in pairs by
// the cached cos and sin of its position, halves (x[i], x[i + r/2]) or neighbours (x[2i], x[2i+1])
// paired; the rest of the head passes through. One element-wise stage over the input's shape.
std::vector<Tensor> rotary_embedding(ConvertContext& c) {
  require_float(c);
  const Node& n = c.node();
  const std::vector<int64_t>& s = c.shape(0);
  bool packed = s.size() == 3;
  if (!packed && s.size() != 4) c.fail("the input must have rank 3 or 4");
  int64_t heads = packed ? n.get_int("num_heads", 0) : s[1];
  if (packed && (heads < 1 || s[2] % heads))
    c.fail("a rank-3 input needs num_heads dividing its hidden size");
  int64_t head = packed ? s[2] / heads : s[3];
  int64_t rot = n.get_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot < 2 || rot > head || rot % 2)
    c.fail(fmt::format("rotary_embedding_dim {} for heads of {}", rot, head));
  int64_t half = rot / 2;
  bool interleaved = n.get_int("interleaved", 0) != 0;
  bool positions = c.has_input(3);
  int64_t batch = s[0], seq = packed ? s[1] : s[2];
  for (size_t i : {size_t{1}, size_t{2}}) {
    const std::vector<int64_t>& cs = c.shape(i);
    bool ok =
        positions ? cs.size() == 2 && cs[1] == half : cs == std::vector<int64_t>{batch, seq, half};
    if (!ok)
      c.fail(fmt::format(
          "the {} cache has shape {}: {} expected", i == 1 ? "cos" : "sin", shape_text(cs),
          positions ? fmt::format("(positions, {})", half) : shape_text({batch, seq, half})));
  }
  if (positions && c.shape(3) != std::vector<int64_t>{batch, seq})
    c.fail(fmt::format("position_ids must be {}", shape_text({batch, seq})));
  int64_t rows = c.shape(1)[0];
  const Tensor& x = c.input(0);
  return {te::compute(
      s,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr b = v[0], sq = packed ? Expr(v[1]) : Expr(v[2]);
        Expr h = packed ? ir::floordiv(v[2], const_i32(head)) : Expr(v[1]);
        Expr d = packed ? ir::floormod(v[2], const_i32(head)) : Expr(v[3]);
        auto at = [&](Expr dd) {
          if (packed) return x({v[0], v[1], h * const_i32(head) + dd});
          return x({v[0], v[1], v[2], dd});
        };
        // The pair of d, its two values and which of the pair d is.
        Expr i, x1, x2, second;
        if (interleaved) {
          i = ir::min(ir::floordiv(d, const_i32(2)), const_i32(half - 1));
          x1 = at(i * const_i32(2));
          x2 = at(i * const_i32(2) + Expr(1));
          second = ir::floormod(d, const_i32(2)) == Expr(1);
        } else {
          i = ir::floormod(d, const_i32(half));
          x1 = at(i);
          x2 = at(i + const_i32(half));
          second = d >= const_i32(half);
        }
        std::vector<Expr> cache_at = {b, sq, i};
        if (positions) {
          Expr p = c.load(3, {b, sq});
          if (p.dtype() != kInt32) p = ir::cast(kInt32, p);
          cache_at = {ir::max(ir::min(p, const_i32(rows - 1)), Expr(0)), i};
        }
        Expr cos = c.load(1, cache_at), sin = c.load(2, cache_at);
        Expr rotated = ir::select(second, sin * x1 + cos * x2, cos * x1 - sin * x2);
        return ir::select(d < const_i32(rot), rotated, at(d));
      },
      c.name("rotary_embedding"))};
}

}  // namespace tyche::graph::ops
