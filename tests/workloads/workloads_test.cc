#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "interp/interpreter.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "runtime/compare.h"
#include "workloads/families.h"
#include "workloads/reference.h"
#include "workloads/workloads.h"

namespace tyche::workloads {
namespace {

using ::testing::HasSubstr;

std::string resolve_error(const std::string& name, const std::string& extents = "",
                          const std::string& dtypes = "") {
  try {
    resolve(name, extents, dtypes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Compares printed IR with tests/golden/<name>.txt; TYCHE_UPDATE_GOLDEN=1 rewrites the file.
void expect_golden(const std::string& name, const std::string& text) {
  std::string path = std::string(TYCHE_SOURCE_DIR) + "/tests/golden/" + name + ".txt";
  if (std::getenv("TYCHE_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(text, ss.str()) << "golden mismatch for " << name;
}

TEST(Golden, Presets) {
  for (const char* name : {"GMM-1", "C2D-1", "SFM-1", "CBR-1"})
    expect_golden(name, ir::to_string(get_preset(name).func));
}

TEST(Golden, IndexNotationMatmul) {
  Workload w = from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=64,j=32,k=16");
  expect_golden("index_notation_matmul", ir::to_string(w.func));
}

TEST(Presets, FiftySixNamesWithFlops) {
  auto names = preset_names();
  ASSERT_EQ(names.size(), 56u);
  EXPECT_EQ(names.front(), "GMM-1");
  EXPECT_EQ(names.back(), "DENSE_RELU-4");
  Workload gmm4 = get_preset("GMM-4");
  EXPECT_DOUBLE_EQ(gmm4.flop, 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(gmm4.params, (std::vector<int64_t>{1, 1024, 1024, 1024}));
}

// The PrimFunc's params agree with the shapes the plain reference expects, for all 56 presets.
TEST(Presets, BufferShapesMatchReference) {
  for (const std::string& name : preset_names()) {
    Workload w = get_preset(name);
    TensorShapes shapes = reference_shapes(w.op, w.params);
    auto inputs = w.func.inputs(), outputs = w.func.outputs();
    ASSERT_EQ(inputs.size(), shapes.inputs.size()) << name;
    ASSERT_EQ(outputs.size(), shapes.outputs.size()) << name;
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_EQ(ir::const_shape(inputs[i]), shapes.inputs[i]) << name;
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_EQ(ir::const_shape(outputs[i]), shapes.outputs[i]) << name;
    EXPECT_GT(w.flop, 0) << name;
  }
}

TEST(Presets, PaddingIsItsOwnBlock) {
  std::string c2d = ir::to_string(get_preset("C2D-1").func);
  EXPECT_THAT(c2d, testing::HasSubstr("with block(\"pad\")"));
  EXPECT_THAT(ir::to_string(get_preset("C2D-2").func),
              testing::Not(testing::HasSubstr("block(\"pad\")")));
}

// Every fact about a family is its table entry's: the names the CLI lists, the reference's
// operators, the tuple's length, and the groups, dilation and capsule that the TE definition,
// the reference and the scale-down rule all read.
TEST(Families, OneTableFeedsPresetsReferenceAndScaleDown) {
  std::vector<std::string> names;
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    names.push_back(f.name);
    ASSERT_EQ(f.presets.size(), 4u);
    for (const std::vector<int64_t>& p : f.presets) EXPECT_EQ(p.size(), f.params.size());
    EXPECT_EQ(find_family(f.name), &f);
    Workload small = scaled_down(get_preset(f.name + "-3"));
    EXPECT_EQ(small.params.size(), f.params.size());
    EXPECT_LE(small.flop, get_preset(f.name + "-3").flop);
    if (f.groups > 1) {
      EXPECT_EQ(small.params[3] % f.groups, 0);
    }
  }
  EXPECT_EQ(names, op_names());
  EXPECT_EQ(names, reference_ops());
  EXPECT_EQ(find_family("grp")->groups, 4);
  EXPECT_EQ(find_family("DIL")->dilation, 2);
  EXPECT_EQ(find_family("CAP")->capsule, 4);
  EXPECT_EQ(find_family("XYZ"), nullptr);
  // GRP's weight holds CI / groups channels in the TE definition and in the reference alike.
  Workload grp = get_preset("GRP-3");  // CI = 256
  EXPECT_EQ(reference_shapes("GRP", grp.params).inputs[1][2], 256 / 4);
  EXPECT_EQ(grp.func.inputs()[1]->shape[2].as<ir::IntImmNode>()->value, 256 / 4);
}

TEST(Presets, UnknownNamesAreInputErrors) {
  EXPECT_THROW(get_preset("GMM-5"), InputError);
  EXPECT_THROW(get_preset("FOO-1"), InputError);
  EXPECT_THROW(get_preset("GMM"), InputError);
  EXPECT_THROW(resolve("C[i,j] += A[i,k]*B[k,j]", ""), InputError);
  EXPECT_THROW(resolve("GMM-1", "i=4"), InputError);
  EXPECT_EQ(resolve("gmm-1", "").name, "GMM-1");
  EXPECT_THAT(resolve_error("SFM-4-U8S8"),
              HasSubstr("SFM has no U8S8 variant (typed presets: GMM, C2D, DENSE_RELU)"));
  EXPECT_THAT(resolve_error("GMM-4-U8S9"), HasSubstr("unknown workload 'GMM-4-U8S9'"));
  EXPECT_THAT(resolve_error("GMM-4", "", "X=int8"),
              HasSubstr("--dtypes is only for index-notation formulas"));
}

// The typed presets: each names its types, keeps its family's op and parameters, and its buffers
// are typed as its precision says (the weights' layout-free mark included).
TEST(Presets, TypedVariants) {
  Workload u8 = resolve("gmm-4-u8s8", "");
  EXPECT_EQ(u8.name, "GMM-4-U8S8");
  EXPECT_EQ(u8.op, "GMM");
  EXPECT_EQ(u8.precision, "U8S8");
  EXPECT_EQ(u8.params, get_preset("GMM-4").params);
  EXPECT_EQ(u8.flop, get_preset("GMM-4").flop);
  EXPECT_EQ(u8.func.inputs()[0]->dtype, DataType::UInt(8));
  EXPECT_EQ(u8.func.inputs()[1]->dtype, DataType::Int(8));
  EXPECT_EQ(u8.func->params.back()->dtype, kInt32);
  Workload conv = get_preset("C2D-3-U8S8");
  EXPECT_EQ(conv.func.inputs()[0]->dtype, DataType::UInt(8));
  EXPECT_EQ(conv.constant_params, get_preset("C2D-3").constant_params);
  Workload bert = get_preset("DENSE-BERT-BF16");
  EXPECT_EQ(bert.op, "DENSE_RELU");
  EXPECT_EQ(bert.params, (std::vector<int64_t>{128, 3072, 768}));
  EXPECT_EQ(bert.func.inputs()[1]->dtype, DataType::BFloat16());
  EXPECT_EQ(bert.func->params.back()->dtype, kFloat32);
  EXPECT_EQ(get_preset("DENSE-BERT").func.inputs()[0]->dtype, kFloat32);
  EXPECT_EQ(scaled_down(u8).precision, "U8S8");
  // float32 presets are unchanged by the typed families' build: their structural hash keys
  // databases.
  EXPECT_EQ(ir::structural_hash(make_workload("GMM", get_preset("GMM-1").params, "").func),
            ir::structural_hash(get_preset("GMM-1").func));
  EXPECT_THAT(typed_preset_names(), ::testing::Contains("DENSE-BERT-BF16"));
}

// Every typed variant's unscheduled IR, interpreted, matches its reference exactly (integers) or
// to bfloat16's inputs' float32 tolerance.
TEST(Interpreter, MatchesReferenceOnTypedPresets) {
  for (const char* name : {"GMM-2-U8S8", "GMM-4-BF16", "C2D-3-U8S8", "C2D-1-BF16",
                           "DENSE_RELU-3-U8S8", "DENSE-BERT-BF16"}) {
    Workload w = scaled_down(get_preset(name));
    auto inputs = make_inputs(w.func, 7);
    auto actual = interp::run_on_inputs(w.func, inputs);
    auto expected = w.reference(inputs);
    runtime::Comparison c = runtime::compare(actual[0], expected[0]);
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
    if (expected[0].dtype().is_integer()) {
      EXPECT_EQ(c.max_abs_error, 0) << name;
    }
    inputs[0].set_flat(3, inputs[0].get_flat(3) == 1 ? 2 : 1);  // the check is not vacuous
    EXPECT_FALSE(runtime::compare(actual[0], w.reference(inputs)[0]).ok) << name;
  }
}

// The interpreter running the unscheduled IR agrees with the plain reference, for every preset
// of every family, on scaled-down shapes.
TEST(Interpreter, MatchesReferenceOnEveryPreset) {
  for (const std::string& name : preset_names()) {
    Workload w = scaled_down(get_preset(name));
    auto inputs = make_inputs(w.func, 7);
    auto actual = interp::run_on_inputs(w.func, inputs);
    auto expected = w.reference(inputs);
    ASSERT_EQ(actual.size(), expected.size()) << name;
    for (size_t i = 0; i < actual.size(); ++i) {
      runtime::Comparison c = runtime::compare(actual[i], expected[i]);
      EXPECT_TRUE(c.ok) << name << ": " << c.message;
    }
  }
}

// T2D reads its input through the dilation (no zero-filled copy): geometries whose dilated
// padding K-1-pad is not a whole number of input pixels shift the phase (stride 2 with an odd
// K-1-pad, stride 3), and stride 1 takes the plain path. The presets all have K-1-pad = 2s.
TEST(Interpreter, TransposedConvMatchesReferenceAtEveryPhase) {
  using Params = std::vector<int64_t>;  // N, H, W, CI, CO, K, stride, pad
  for (const Params& p : {Params{1, 3, 4, 2, 3, 3, 2, 1}, Params{1, 4, 3, 2, 2, 4, 3, 1},
                          Params{1, 3, 3, 2, 2, 4, 3, 0}, Params{2, 3, 2, 3, 2, 3, 1, 1},
                          Params{1, 2, 3, 2, 2, 5, 2, 3}, Params{1, 3, 3, 1, 1, 2, 2, 0}}) {
    Workload w = make_workload("T2D", p);
    auto inputs = make_inputs(w.func, 3);
    auto actual = interp::run_on_inputs(w.func, inputs);
    runtime::Comparison c = runtime::compare(actual[0], w.reference(inputs)[0]);
    EXPECT_TRUE(c.ok) << fmt::format("T2D {}: {}", fmt::join(p, ","), c.message);
  }
}

// A corrupted reference input must be caught: the oracle is not vacuous.
TEST(Interpreter, DetectsAWrongInput) {
  Workload w = scaled_down(get_preset("C2D-3"));
  auto inputs = make_inputs(w.func, 7);
  auto actual = interp::run_on_inputs(w.func, inputs);
  inputs[1].set_flat(5, inputs[1].get_flat(5) + 0.5);
  auto expected = w.reference(inputs);
  EXPECT_FALSE(runtime::compare(actual[0], expected[0]).ok);
}

TEST(IndexNotation, InterpreterMatchesDirectEvaluation) {
  struct Case {
    const char* formula;
    const char* extents;
  };
  for (Case c : {Case{"C[i,j] += A[i,k] * B[k,j]", "i=16,j=12,k=20"},
                 Case{"O[n,h,w,co] += I[n, h*2+rh, w*2+rw, ci] * W[rh,rw,ci,co]",
                      "n=1,h=5,w=6,co=4,rh=3,rw=3,ci=3"},
                 Case{"C[i,j] += A[i,k] * B[k,j]; D[i,j] = max(C[i,j], 0.0)", "i=8,j=8,k=8"},
                 Case{"M[i] max= A[i,j]", "i=10,j=7"},
                 Case{"S[i] = exp(A[i]) / (1.0 + abs(B[i]))", "i=9"}}) {
    Workload w = from_index_notation(c.formula, c.extents);
    auto inputs = make_inputs(w.func, 3);
    auto actual = interp::run_on_inputs(w.func, inputs);
    auto expected = w.reference(inputs);
    ASSERT_EQ(actual.size(), expected.size()) << c.formula;
    for (size_t i = 0; i < actual.size(); ++i) {
      runtime::Comparison cmp = runtime::compare(actual[i], expected[i]);
      EXPECT_TRUE(cmp.ok) << c.formula << ": " << cmp.message;
    }
  }
}

TEST(IndexNotation, MatmulFormulaEqualsGmmStructure) {
  // The formula and the preset build the same computation up to names and the batch axis.
  Workload a = from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=8,j=8,k=8");
  Workload b = from_index_notation("Z[x,y] += P[x,r] * Q[r,y]", "x=8,y=8,r=8");
  Workload c = from_index_notation("Z[x,y] += P[x,r] * Q[r,y]", "x=8,y=8,r=4");
  EXPECT_FALSE(ir::structural_equal(a.func, b.func));  // block names differ (C vs Z)
  Workload d = from_index_notation("C[x,y] += A[x,r] * B[r,y]", "x=8,y=8,r=8");
  EXPECT_TRUE(ir::structural_equal(a.func, d.func));  // only index names differ
  EXPECT_FALSE(ir::structural_equal(b.func, c.func));
}

}  // namespace
}  // namespace tyche::workloads
