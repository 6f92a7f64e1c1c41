// RNN, GRU and LSTM (opsets 7-22): forward, reverse or bidirectional, either layout, initial
// states, biases, peepholes, clip, per-batch sequence lengths and every activation ONNX names;
// and LinearAttention (opset 27), whose running state is the same kind of recurrence.
// The sequence is unrolled at compile time (its length is static): each step is one reduction
// for the input's share of the gates, one for the hidden state's, and element-wise computes of
// the gates and the new states, so the whole node is one task whose stages the default schedule
// tiles like any other reduction.
#include <cmath>
#include <functional>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

enum class Cell { kRnn, kGru, kLstm };

// A recurrence's state at one step, kept as a stage of its own: a reduction over one point, which
// neither the default schedule nor the tuner inlines. Inlined, each step's state would be
// expanded into the next step's (which reads it several times), growing exponentially with the
// sequence's length.
Tensor state_stage(const std::vector<int64_t>& shape,
                   const std::function<Expr(const std::vector<ir::Var>&)>& body,
                   const std::string& name) {
  return te::compute(
      shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        ir::IterVar one = te::reduce_axis(1, "r1");
        return te::sum(body(v), {one});
      },
      name);
}

// An activation as ONNX names it, with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  Expr operator()(Expr x) const {
    DataType t = x.dtype();
    auto k = [&](double v) { return ir::make_const(t, v); };
    if (name == "Sigmoid") return ir::sigmoid(x);
    if (name == "Tanh") return ir::tanh(x);
    if (name == "Relu") return ir::max(x, k(0));
    if (name == "Affine") return k(alpha) * x + k(beta);
    if (name == "LeakyRelu") return ir::select(x < k(0), k(alpha) * x, x);
    if (name == "ThresholdedRelu") return ir::select(x > k(alpha), x, k(0));
    if (name == "ScaledTanh") return k(alpha) * ir::tanh(k(beta) * x);
    if (name == "HardSigmoid") return ir::max(k(0), ir::min(k(1), k(alpha) * x + k(beta)));
    if (name == "Elu") return ir::select(x < k(0), k(alpha) * (ir::exp(x) - k(1)), x);
    if (name == "Softsign") return x / (k(1) + ir::abs(x));
    return ir::log(k(1) + ir::exp(x));  // Softplus
  }
};

// The activations of each direction: `per_direction` of them, from the attributes or the defaults.
std::vector<Activation> activations(ConvertContext& c, Cell cell, int directions) {
  std::vector<std::string> names = c.node().get_strings("activations");
  std::vector<double> alphas = c.node().get_floats("activation_alpha");
  std::vector<double> betas = c.node().get_floats("activation_beta");
  size_t per = cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1;
  if (names.empty()) {
    std::vector<std::string> d = cell == Cell::kLstm
                                     ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                 : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"};
    for (int k = 0; k < directions; ++k) names.insert(names.end(), d.begin(), d.end());
  }
  if (names.size() != per * static_cast<size_t>(directions))
    c.fail(fmt::format("{} activations for {} direction(s) (want {} each)", names.size(),
                       directions, per));
  static const std::map<std::string, std::pair<double, double>> kKnown = {
      {"Relu", {0, 0}},         {"Tanh", {0, 0}},
      {"Sigmoid", {0, 0}},      {"Affine", {1, 0}},
      {"LeakyRelu", {0.01, 0}}, {"ThresholdedRelu", {1, 0}},
      {"ScaledTanh", {1, 1}},   {"HardSigmoid", {0.2, 0.5}},
      {"Elu", {1, 0}},          {"Softsign", {0, 0}},
      {"Softplus", {0, 0}}};
  std::vector<Activation> out;
  size_t next_param = 0;
  for (const std::string& n : names) {
    auto it = kKnown.find(n);
    if (it == kKnown.end()) c.fail(fmt::format("unknown activation '{}'", n));
    Activation a{n, it->second.first, it->second.second};
    bool takes = n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" ||
                 n == "HardSigmoid" || n == "Elu";
    if (takes) {
      if (next_param < alphas.size()) a.alpha = alphas[next_param];
      if (next_param < betas.size()) a.beta = betas[next_param];
      ++next_param;
    }
    out.push_back(a);
  }
  return out;
}

std::vector<Tensor> recurrent(ConvertContext& c, Cell cell) {
  const char* kind = cell == Cell::kLstm ? "lstm" : cell == Cell::kGru ? "gru" : "rnn";
  int gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  if (!c.dtype(0).is_float()) c.fail("needs a float input");
  for (size_t i : {size_t{1}, size_t{2}})
    if (c.dtype(i) != c.dtype(0)) c.fail("the weights and the input have different types");
  if (c.rank(0) != 3 || c.rank(1) != 3 || c.rank(2) != 3) c.fail("X, W and R must have rank 3");
  std::string direction = c.node().get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail(fmt::format("unknown direction '{}'", direction));
  int dirs = direction == "bidirectional" ? 2 : 1;
  bool batch_first = c.node().get_int("layout", 0) != 0;
  const std::vector<int64_t>& xs = c.shape(0);
  int64_t steps = batch_first ? xs[1] : xs[0], batch = batch_first ? xs[0] : xs[1], in = xs[2];
  int64_t hidden = c.node().get_int("hidden_size", c.shape(2)[2]);
  if (c.shape(1) != std::vector<int64_t>{dirs, gates * hidden, in} ||
      c.shape(2) != std::vector<int64_t>{dirs, gates * hidden, hidden})
    c.fail(fmt::format("W {} and R {} do not fit {} direction(s), {} gates of {} and input size {}",
                       shape_text(c.shape(1)), shape_text(c.shape(2)), dirs, gates, hidden, in));
  if (c.has_input(3) && c.shape(3) != std::vector<int64_t>{dirs, 2 * gates * hidden})
    c.fail(
        fmt::format("B has shape {}, not {}x{}", shape_text(c.shape(3)), dirs, 2 * gates * hidden));
  std::vector<int64_t> state_shape = batch_first ? std::vector<int64_t>{batch, dirs, hidden}
                                                 : std::vector<int64_t>{dirs, batch, hidden};
  for (size_t i : {size_t{5}, size_t{6}})
    if (c.has_input(i) && c.shape(i) != state_shape)
      c.fail(fmt::format("an initial state of shape {}, not {}", shape_text(c.shape(i)),
                         shape_text(state_shape)));
  if (cell == Cell::kLstm && c.has_input(7) && c.shape(7) != std::vector<int64_t>{dirs, 3 * hidden})
    c.fail(fmt::format("P has shape {}, not {}x{}", shape_text(c.shape(7)), dirs, 3 * hidden));
  if (c.has_input(4) && (c.shape(4) != std::vector<int64_t>{batch} || !c.dtype(4).is_integer()))
    c.fail("sequence_lens must hold one integer per batch");
  if (cell == Cell::kLstm && c.node().get_int("input_forget", 0) != 0)
    c.fail("input_forget is not supported");
  bool linear_before_reset = c.node().get_int("linear_before_reset", 0) != 0;
  double clip = c.node().get_float("clip", 0);
  std::vector<Activation> acts = activations(c, cell, dirs);
  DataType t = c.dtype(0);
  auto k = [&](double v) { return ir::make_const(t, v); };
  auto clipped = [&](Expr e) { return clip > 0 ? ir::min(ir::max(e, k(-clip)), k(clip)) : e; };
  auto state_at = [&](size_t i, Expr d, Expr b, Expr h) {  // an initial state's element
    return batch_first ? c.load(i, {b, d, h}) : c.load(i, {d, b, h});
  };
  std::vector<std::vector<Tensor>> ys(static_cast<size_t>(dirs));  // each direction's H per time
  std::vector<Tensor> last_h, last_c;
  for (int d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation* f = &acts[static_cast<size_t>(d) * (cell == Cell::kLstm  ? 3
                                                          : cell == Cell::kGru ? 2
                                                                               : 1)];
    Expr dd = Expr(d);
    auto bias = [&](Expr g) {  // Wb + Rb of gate row g
      if (!c.has_input(3)) return k(0);
      return c.load(3, {dd, g}) + c.load(3, {dd, g + const_i32(gates * hidden)});
    };
    auto init = [&](size_t i, const char* name) {
      return te::compute(
          {batch, hidden},
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            return c.has_input(i) ? state_at(i, dd, v[0], v[1]) : k(0);
          },
          c.name(fmt::format("{}_{}_d{}", kind, name, d)));
    };
    Tensor h = init(5, "h0"), cs = init(6, "c0");
    std::vector<Tensor> per_time(static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      int64_t time = reverse ? steps - 1 - s : s;
      std::string tag = fmt::format("{}_d{}_t{}", kind, d, time);
      // The input's and the hidden state's shares of every gate: [batch, gates * hidden].
      ir::IterVar ri = te::reduce_axis(in, "ri");
      Tensor xw = te::compute(
          {batch, gates * hidden},
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            Expr x = batch_first ? c.load(0, {v[0], const_i32(time), ri.var})
                                 : c.load(0, {const_i32(time), v[0], ri.var});
            return te::sum(x * c.load(1, {dd, v[1], ri.var}), {ri});
          },
          c.name(tag + "_xw"));
      ir::IterVar rh = te::reduce_axis(hidden, "rh");
      Tensor hr = te::compute(
          {batch, gates * hidden},
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            return te::sum(h({v[0], rh.var}) * c.load(2, {dd, v[1], rh.var}), {rh});
          },
          c.name(tag + "_hr"));
      auto pre = [&](int gate, Expr b, Expr j) {  // gate's pre-activation at (b, j)
        Expr g = const_i32(gate * hidden) + j;
        return xw({b, g}) + hr({b, g}) + bias(g);
      };
      auto active = [&](Expr b) {  // whether this step is within batch b's sequence
        if (!c.has_input(4)) return ir::make_bool(true);
        return ir::cast(kInt64, c.load(4, {b})) > ir::make_const(kInt64, time);
      };
      Tensor next_h, next_c;
      if (cell == Cell::kRnn) {
        next_h = state_stage(
            {batch, hidden},
            [&](const std::vector<ir::Var>& v) {
              return ir::select(active(v[0]), f[0](clipped(pre(0, v[0], v[1]))), h({v[0], v[1]}));
            },
            c.name(tag + "_h"));
      } else if (cell == Cell::kGru) {
        // Gates z, r, h; h's recurrent term is (r * H) Rh, or r * (H Rh + Rbh) with
        // linear_before_reset.
        Tensor r = te::compute(
            {batch, hidden},
            [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
              return f[0](clipped(pre(1, v[0], v[1])));
            },
            c.name(tag + "_r"));
        ir::IterVar rr = te::reduce_axis(hidden, "rr");
        Tensor rh_term = te::compute(
            {batch, hidden},
            [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
              Expr g = const_i32(2 * hidden) + v[1];
              Expr hv =
                  linear_before_reset ? h({v[0], rr.var}) : r({v[0], rr.var}) * h({v[0], rr.var});
              return te::sum(hv * c.load(2, {dd, g, rr.var}), {rr});
            },
            c.name(tag + "_rh"));
        next_h = state_stage(
            {batch, hidden},
            [&](const std::vector<ir::Var>& v) {
              Expr b = v[0], j = v[1];
              Expr z = f[0](clipped(pre(0, b, j)));
              Expr g = const_i32(2 * hidden) + j;
              Expr wb = c.has_input(3) ? c.load(3, {dd, g}) : k(0);
              Expr rb = c.has_input(3) ? c.load(3, {dd, g + const_i32(gates * hidden)}) : k(0);
              Expr recur =
                  linear_before_reset ? r({b, j}) * (rh_term({b, j}) + rb) : rh_term({b, j}) + rb;
              Expr cand = f[1](clipped(xw({b, g}) + wb + recur));
              Expr hn = (k(1) - z) * cand + z * h({b, j});
              return ir::select(active(b), hn, h({b, j}));
            },
            c.name(tag + "_h"));
      } else {
        // Gates i, o, f, c (ONNX's order), peepholes on i, o, f.
        auto peep = [&](int which, Expr j) {  // P's order: i, o, f
          if (!c.has_input(7)) return k(0);
          return c.load(7, {dd, const_i32(which * hidden) + j});
        };
        next_c = state_stage(
            {batch, hidden},
            [&](const std::vector<ir::Var>& v) {
              Expr b = v[0], j = v[1], cp = cs({b, j});
              Expr ig = f[0](clipped(pre(0, b, j) + peep(0, j) * cp));
              Expr fg = f[0](clipped(pre(2, b, j) + peep(2, j) * cp));
              Expr cand = f[1](clipped(pre(3, b, j)));
              return ir::select(active(b), fg * cp + ig * cand, cp);
            },
            c.name(tag + "_c"));
        next_h = state_stage(
            {batch, hidden},
            [&](const std::vector<ir::Var>& v) {
              Expr b = v[0], j = v[1], cn = next_c({b, j});
              Expr og = f[0](clipped(pre(1, b, j) + peep(1, j) * cn));
              return ir::select(active(b), og * f[2](cn), h({b, j}));
            },
            c.name(tag + "_h"));
        cs = next_c;
      }
      // Y at this time: the new state, 0 past the batch's sequence.
      Tensor hn = next_h;
      per_time[static_cast<size_t>(time)] = te::compute(
          {batch, hidden},
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            return ir::select(active(v[0]), hn({v[0], v[1]}), k(0));
          },
          c.name(tag + "_y"));
      h = next_h;
    }
    ys[static_cast<size_t>(d)] = per_time;
    last_h.push_back(h);
    last_c.push_back(cs);
  }
  // Y ([time, dirs, batch, hidden], or [batch, time, dirs, hidden]) and the final states.
  std::vector<int64_t> y_shape = batch_first ? std::vector<int64_t>{batch, steps, dirs, hidden}
                                             : std::vector<int64_t>{steps, dirs, batch, hidden};
  auto pick = [&](const std::vector<Tensor>& ts, Expr which, Expr b, Expr j) {
    Expr e = ts.back()({b, j});
    for (size_t q = ts.size() - 1; q-- > 0;)
      e = ir::select(which == const_i32(static_cast<int64_t>(q)), ts[q]({b, j}), e);
    return e;
  };
  std::vector<Tensor> outs;
  outs.push_back(te::compute(
      y_shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr time = batch_first ? v[1] : v[0], d = batch_first ? v[2] : v[1];
        Expr b = batch_first ? v[0] : v[2];
        Expr e = pick(ys.back(), time, b, v[3]);
        for (size_t q = ys.size() - 1; q-- > 0;)
          e = ir::select(d == const_i32(static_cast<int64_t>(q)), pick(ys[q], time, b, v[3]), e);
        return e;
      },
      c.name(std::string(kind) + "_y")));
  auto final_state = [&](const std::vector<Tensor>& ts, const char* name) {
    return te::compute(
        state_shape,
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          Expr d = batch_first ? v[1] : v[0], b = batch_first ? v[0] : v[1];
          return pick(ts, d, b, v[2]);
        },
        c.name(fmt::format("{}_{}", kind, name)));
  };
  outs.push_back(final_state(last_h, "y_h"));
  if (cell == Cell::kLstm) outs.push_back(final_state(last_c, "y_c"));
  return outs;
}

}  // namespace

// LinearAttention (opset 27): attention through a running state S (batch, kv heads, d_k, d_v),
// one step per position t: gated rules decay S by exp(decay_t), delta rules replace v_t by
// beta_t (v_t - S^T k_t), then S += k_t v_t^T, and the output is scale * q_t S (each query head
// reading its key/value group's state). Unrolled over the sequence, in float32.
std::vector<Tensor> linear_attention(ConvertContext& c) {
  std::string rule = c.node().get_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.fail(fmt::format("unknown update_rule '{}' (linear, gated, delta or gated_delta)", rule));
  bool gating = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (gating != c.has_input(4))
    c.fail(fmt::format("update_rule '{}' {} the decay input", rule, gating ? "needs" : "forbids"));
  if (delta != c.has_input(5))
    c.fail(fmt::format("update_rule '{}' {} the beta input", rule, delta ? "needs" : "forbids"));
  int64_t hq = c.node().get_int("q_num_heads", 0), hkv = c.node().get_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    c.fail(
        fmt::format("q_num_heads ({}) must be a positive multiple of kv_num_heads ({})", hq, hkv));
  for (size_t i = 0; i < 3; ++i)
    if (c.rank(i) != 3 || !c.dtype(i).is_float())
      c.fail("query, key and value must be float tensors of shape (batch, length, heads * size)");
  const std::vector<int64_t>& qs = c.shape(0);
  int64_t batch = qs[0], steps = qs[1];
  if (qs[2] % hq != 0 || c.shape(2)[2] % hkv != 0)
    c.fail("the hidden sizes do not divide into the heads");
  int64_t dk = qs[2] / hq, dv = c.shape(2)[2] / hkv, group = hq / hkv;
  if (c.shape(1) != std::vector<int64_t>{batch, steps, hkv * dk} ||
      c.shape(2) != std::vector<int64_t>{batch, steps, hkv * dv})
    c.fail(fmt::format("key {} and value {} do not fit query {}", shape_text(c.shape(1)),
                       shape_text(c.shape(2)), shape_text(qs)));
  std::vector<int64_t> state_shape = {batch, hkv, dk, dv};
  if (c.has_input(3) && c.shape(3) != state_shape)
    c.fail(fmt::format("a past state of shape {}, not {}", shape_text(c.shape(3)),
                       shape_text(state_shape)));
  int64_t decay_last = gating ? c.shape(4).back() : 0;
  if (gating && (c.rank(4) != 3 || (decay_last != hkv && decay_last != hkv * dk)))
    c.fail("decay must be (batch, length, kv heads) or (batch, length, kv heads * d_k)");
  int64_t beta_last = delta ? c.shape(5).back() : 0;
  if (delta && (c.rank(5) != 3 || (beta_last != hkv && beta_last != 1)))
    c.fail("beta must be (batch, length, kv heads) or (batch, length, 1)");
  double scale = c.node().get_float("scale", 0);
  if (scale == 0) scale = 1 / std::sqrt(static_cast<double>(dk));
  auto f32 = [](Expr e) { return ir::cast(kFloat32, std::move(e)); };
  auto at = [&](size_t i, Expr b, int64_t t, Expr head, int64_t size, Expr j) {  // (B, T, H*D)
    return f32(c.load(i, {b, const_i32(t), head * const_i32(size) + j}));
  };
  Tensor state = te::compute(
      state_shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return c.has_input(3) ? f32(c.load(3, exprs(v))) : ir::make_float(0);
      },
      c.name("linear_state0"));
  std::vector<Tensor> per_step;
  for (int64_t t = 0; t < steps; ++t) {
    std::string tag = fmt::format("linear_attention_t{}", t);
    Tensor decayed = state;
    if (gating) {
      Tensor prev = state;
      decayed = te::compute(
          state_shape,
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            Expr g = decay_last == hkv ? f32(c.load(4, {v[0], const_i32(t), v[1]}))
                                       : at(4, v[0], t, v[1], dk, v[2]);
            return prev(exprs(v)) * ir::exp(g);
          },
          c.name(tag + "_decayed"));
    }
    Tensor update;  // v_t, or beta_t (v_t - S^T k_t)
    if (delta) {
      ir::IterVar rd = te::reduce_axis(dk, "rd");
      Tensor s = decayed;
      Tensor retrieved = te::compute(
          {batch, hkv, dv},
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            return te::sum(s({v[0], v[1], rd.var, v[2]}) * at(1, v[0], t, v[1], dk, rd.var), {rd});
          },
          c.name(tag + "_retrieved"));
      update = te::compute(
          {batch, hkv, dv},
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            Expr beta = f32(c.load(5, {v[0], const_i32(t), beta_last == 1 ? Expr(0) : Expr(v[1])}));
            return beta * (at(2, v[0], t, v[1], dv, v[2]) - retrieved(exprs(v)));
          },
          c.name(tag + "_update"));
    }
    Tensor s = decayed;
    state = state_stage(
        state_shape,
        [&](const std::vector<ir::Var>& v) {
          Expr u = delta ? update({v[0], v[1], v[3]}) : at(2, v[0], t, v[1], dv, v[3]);
          return s(exprs(v)) + at(1, v[0], t, v[1], dk, v[2]) * u;
        },
        c.name(tag + "_state"));
    ir::IterVar rq = te::reduce_axis(dk, "rq");
    Tensor now = state;
    per_step.push_back(te::compute(
        {batch, hq, dv},
        [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
          Expr kv = ir::floordiv(v[1], const_i32(group));
          return te::sum(at(0, v[0], t, v[1], dk, rq.var) * now({v[0], kv, rq.var, v[2]}), {rq});
        },
        c.name(tag + "_out")));
  }
  DataType t_out = c.dtype(0);
  DataType t_state = c.has_input(3) ? c.dtype(3) : t_out;
  Tensor output = te::compute(
      {batch, steps, hq * dv},
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        Expr head = ir::floordiv(v[2], const_i32(dv)), j = ir::floormod(v[2], const_i32(dv));
        Expr e = per_step.back()({v[0], head, j});
        for (size_t q = per_step.size() - 1; q-- > 0;)
          e = ir::select(v[1] == const_i32(static_cast<int64_t>(q)), per_step[q]({v[0], head, j}),
                         e);
        return ir::cast(t_out, e * ir::make_float(scale));
      },
      c.name("linear_attention"));
  Tensor last = state;
  Tensor present = te::compute(
      state_shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        return ir::cast(t_state, last(exprs(v)));
      },
      c.name("present_state"));
  return {output, present};
}

std::vector<Tensor> rnn(ConvertContext& c) {
  return recurrent(c, Cell::kRnn);
}
std::vector<Tensor> gru(ConvertContext& c) {
  return recurrent(c, Cell::kGru);
}
std::vector<Tensor> lstm(ConvertContext& c) {
  return recurrent(c, Cell::kLstm);
}

}  // namespace tyche::graph::ops
