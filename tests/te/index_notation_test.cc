// The index-notation front-end: parsing, semantic checks (each with its message), shape inference,
// lowering to a PrimFunc, and robustness against arbitrary input.
#include "te/index_notation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "ir/functor.h"
#include "ir/printer.h"
#include "support/error.h"

namespace tyche::te {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Shape = std::vector<int64_t>;

// Every block of a function, in pre-order.
std::vector<const ir::BlockNode*> blocks_of(const ir::PrimFunc& f) {
  struct Collector : ir::StmtExprVisitor {
    std::vector<const ir::BlockNode*> blocks;
    void visit_block(const ir::BlockNode* n) override {
      blocks.push_back(n);
      StmtExprVisitor::visit_block(n);
    }
  } c;
  c.visit_stmt(f->body);
  return c.blocks;
}

const ir::BlockNode* block_named(const ir::PrimFunc& f, const std::string& name) {
  for (const ir::BlockNode* b : blocks_of(f))
    if (b->name == name) return b;
  return nullptr;
}

std::vector<std::string> block_names(const ir::PrimFunc& f) {
  std::vector<std::string> r;
  for (const ir::BlockNode* b : blocks_of(f)) r.push_back(b->name);
  return r;
}

std::vector<std::string> buffer_names(const std::vector<ir::Buffer>& bs) {
  std::vector<std::string> r;
  for (const ir::Buffer& b : bs) r.push_back(b->name);
  return r;
}

int64_t const_of(const ir::Expr& e) {
  auto v = ir::as_const_int(e);
  EXPECT_TRUE(v.has_value());
  return v.value_or(-1);
}

// The message of the InputError that parsing throws ("" if it does not throw one).
std::string parse_error(std::string_view formula, std::string_view extents) {
  try {
    parse_index_notation(formula, extents);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(IndexNotation, Matmul) {
  IndexNotationProgram p = parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=8, j=6, k=4");
  ASSERT_EQ(p.statements.size(), 1u);
  const IndexNotationStatement& st = p.statements[0];
  EXPECT_EQ(st.output, "C");
  EXPECT_THAT(st.axes, ElementsAre("i", "j"));
  EXPECT_THAT(st.reduce_axes, ElementsAre("k"));
  EXPECT_EQ(st.reducer, ReducerKind::kSum);
  EXPECT_EQ(st.assign, AssignOp::kAddAssign);
  EXPECT_THAT(p.inputs, ElementsAre("A", "B"));
  EXPECT_THAT(p.outputs, ElementsAre("C"));
  EXPECT_TRUE(p.intermediates.empty());
  EXPECT_EQ(p.tensor("A").shape, (Shape{8, 4}));
  EXPECT_EQ(p.tensor("B").shape, (Shape{4, 6}));
  EXPECT_EQ(p.tensor("C").shape, (Shape{8, 6}));
  EXPECT_EQ(p.tensor("C").role, TensorRole::kOutput);
  EXPECT_THAT(p.input_shapes(), ElementsAre(Shape{8, 4}, Shape{4, 6}));
  EXPECT_THAT(p.output_shapes(), ElementsAre(Shape{8, 6}));
  EXPECT_EQ(p.extent("k"), 4);

  ir::PrimFunc f = to_prim_func(p, "matmul");
  EXPECT_EQ(f->name, "matmul");
  EXPECT_THAT(buffer_names(f->params), ElementsAre("A", "B", "C"));
  EXPECT_EQ(f->num_outputs, 1);
  EXPECT_THAT(block_names(f), ElementsAre("root", "C"));
  const ir::BlockNode* c = block_named(f, "C");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->iter_vars.size(), 3u);
  EXPECT_EQ(c->iter_vars[0].kind, ir::IterKind::kSpatial);
  EXPECT_EQ(c->iter_vars[1].kind, ir::IterKind::kSpatial);
  EXPECT_EQ(c->iter_vars[2].kind, ir::IterKind::kReduce);
  EXPECT_EQ(c->iter_vars[2].var.name(), "vk");
  EXPECT_EQ(const_of(c->iter_vars[0].dom.extent), 8);
  EXPECT_EQ(const_of(c->iter_vars[1].dom.extent), 6);
  EXPECT_EQ(const_of(c->iter_vars[2].dom.extent), 4);
  EXPECT_TRUE(c->init.defined());
  std::vector<std::string> reads;
  for (const ir::BufferRegion& r : c->reads) reads.push_back(r.buffer->name);
  EXPECT_THAT(reads, ::testing::IsSupersetOf({"A", "B"}));
  ASSERT_EQ(c->writes.size(), 1u);
  EXPECT_EQ(c->writes[0].buffer->name, "C");
  EXPECT_EQ(ir::const_shape(f->params[0]), (Shape{8, 4}));
  EXPECT_EQ(ir::const_shape(f->params[1]), (Shape{4, 6}));
  EXPECT_FALSE(ir::to_string(f).empty());
}

TEST(IndexNotation, ConvInfersInputShape) {
  IndexNotationProgram p =
      parse_index_notation("O[n,h,w,co] += I[n, h*2+rh, w*2+rw, ci] * W[rh,rw,ci,co]",
                           "n=1,h=4,w=5,co=3,rh=3,rw=2,ci=2");
  EXPECT_THAT(p.statements[0].reduce_axes, ElementsAre("rh", "rw", "ci"));
  // (4-1)*2 + (3-1) + 1 = 9, (5-1)*2 + (2-1) + 1 = 10.
  EXPECT_EQ(p.tensor("I").shape, (Shape{1, 9, 10, 2}));
  EXPECT_EQ(p.tensor("W").shape, (Shape{3, 2, 2, 3}));
  EXPECT_EQ(p.tensor("O").shape, (Shape{1, 4, 5, 3}));
  const AffineIndex& h = p.statements[0].rhs.args[0].indices[1];
  EXPECT_EQ(h.text, "h*2+rh");
  ASSERT_EQ(h.terms.size(), 2u);
  EXPECT_EQ(h.terms[0].index, "h");
  EXPECT_EQ(h.terms[0].coeff, 2);
  EXPECT_EQ(h.offset, 0);

  ir::PrimFunc f = to_prim_func(p);
  EXPECT_THAT(buffer_names(f->params), ElementsAre("I", "W", "O"));
  const ir::BlockNode* o = block_named(f, "O");
  ASSERT_NE(o, nullptr);
  ASSERT_EQ(o->iter_vars.size(), 7u);
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ(o->iter_vars[i].kind, i < 4 ? ir::IterKind::kSpatial : ir::IterKind::kReduce);
  EXPECT_EQ(o->iter_vars[4].var.name(), "vrh");
  EXPECT_EQ(ir::const_shape(f->params[0]), (Shape{1, 9, 10, 2}));
}

TEST(IndexNotation, AffineIndexForms) {
  IndexNotationProgram p = parse_index_notation(
      "B[i] = A[2*i+1] + A[i*2] + A[(i+1)*2 - 2] + A[3] + A[-(-i)] + A[4 - i]", "i=5");
  // max(2*4+1, 3, 4 - 0) + 1
  EXPECT_EQ(p.tensor("A").shape, (Shape{10}));
  EXPECT_NO_THROW(to_prim_func(p));
}

TEST(IndexNotation, ChainHasIntermediate) {
  IndexNotationProgram p =
      parse_index_notation("C[i,j] += A[i,k]*B[k,j]; D[i,j] = max(C[i,j], 0.0)", "i=4,j=3,k=2");
  EXPECT_THAT(p.inputs, ElementsAre("A", "B"));
  EXPECT_THAT(p.intermediates, ElementsAre("C"));
  EXPECT_THAT(p.outputs, ElementsAre("D"));
  EXPECT_EQ(p.tensor("C").role, TensorRole::kIntermediate);
  EXPECT_FALSE(p.statements[1].is_reduction());

  ir::PrimFunc f = to_prim_func(p);
  EXPECT_THAT(buffer_names(f->params), ElementsAre("A", "B", "D"));
  EXPECT_THAT(block_names(f), ElementsAre("root", "C", "D"));
  const ir::BlockNode* root = block_named(f, "root");
  ASSERT_NE(root, nullptr);
  EXPECT_THAT(buffer_names(root->alloc_buffers), ElementsAre("C"));
  const ir::BlockNode* d = block_named(f, "D");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->iter_vars.size(), 2u);
  EXPECT_FALSE(d->init.defined());
}

TEST(IndexNotation, MultipleOutputsInStatementOrder) {
  IndexNotationProgram p =
      parse_index_notation("Y[i] = X[i] * 2; Z[i] = exp(X[i]); W[i] = Y[i] + 1", "i=3");
  EXPECT_THAT(p.inputs, ElementsAre("X"));
  EXPECT_THAT(p.intermediates, ElementsAre("Y"));
  EXPECT_THAT(p.outputs, ElementsAre("Z", "W"));
  ir::PrimFunc f = to_prim_func(p);
  EXPECT_THAT(buffer_names(f->params), ElementsAre("X", "Z", "W"));
  EXPECT_EQ(f->num_outputs, 2);
}

TEST(IndexNotation, MaxAndMinReductions) {
  IndexNotationProgram p = parse_index_notation("M[i] max= A[i,j]; N[i] min= A[i,j]", "i=3,j=7");
  EXPECT_EQ(p.statements[0].reducer, ReducerKind::kMax);
  EXPECT_EQ(p.statements[1].reducer, ReducerKind::kMin);
  EXPECT_THAT(p.statements[0].reduce_axes, ElementsAre("j"));
  ir::PrimFunc f = to_prim_func(p);
  const ir::BlockNode* m = block_named(f, "M");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->iter_vars.size(), 2u);
  EXPECT_EQ(m->iter_vars[1].kind, ir::IterKind::kReduce);
  EXPECT_EQ(m->iter_vars[1].var.name(), "vj");
  // The init stores the max identity, the body combines with max.
  EXPECT_THAT(ir::to_string(m->init), HasSubstr("inf"));
  EXPECT_THAT(ir::to_string(m->body), HasSubstr("max"));
}

TEST(IndexNotation, AssignWithReductionIndexIsSum) {
  IndexNotationProgram p = parse_index_notation("S[i] = A[i,j] * A[i,j]", "i=2,j=3");
  EXPECT_TRUE(p.statements[0].is_reduction());
  EXPECT_EQ(p.statements[0].reducer, ReducerKind::kSum);
}

TEST(IndexNotation, ZeroDimensionalTensors) {
  IndexNotationProgram p = parse_index_notation("S[] += A[i] * X[]", "i=5");
  EXPECT_EQ(p.tensor("S").shape, Shape{});
  EXPECT_EQ(p.tensor("X").shape, Shape{});
  ir::PrimFunc f = to_prim_func(p);
  EXPECT_THAT(block_names(f), ElementsAre("root", "S"));
}

TEST(IndexNotation, WhitespaceNumbersAndFunctions) {
  IndexNotationProgram p = parse_index_notation(
      " Y[ i ]=\tsigmoid(-X[i]) / 2.5e-1 + tanh(abs(X[i]))*sqrt(log(exp(1.))) - min(.5, X[i]) ; ",
      " i = 3 ");
  ASSERT_EQ(p.statements.size(), 1u);
  EXPECT_NO_THROW(to_prim_func(p));
}

TEST(IndexNotation, FormulaStringRoundTrips) {
  const std::pair<const char*, const char*> formulas[] = {
      {"C[i,j] += A[i,k]*B[k,j]; D[i,j] = max(C[i,j], 0.0)", "i=3,j=2,k=4"},
      {"O[n,h,w,co] += I[n, h*2+rh, w*2+rw, ci] * W[rh,rw,ci,co]",
       "n=1,h=2,w=2,co=2,rh=3,rw=3,ci=2"},
      {"B[i] = -(A[i] - -A[i+1]) / (A[i] * (A[i] + 1)) - A[2*i - i]", "i=3"},
      {"B[i] = A[4-i] - (A[i] - A[i]) - -A[0]; S[] max= B[i] * 0.125", "i=3"},
  };
  for (const auto& [f, extents] : formulas) {
    IndexNotationProgram p = parse_index_notation(f, extents);
    std::string once = formula_string(p);
    IndexNotationProgram q = parse_index_notation(once, extents_string(p));
    EXPECT_EQ(formula_string(q), once) << f;
    EXPECT_EQ(extents_string(q), extents_string(p));
    EXPECT_EQ(q.input_shapes(), p.input_shapes());
  }
  EXPECT_EQ(formula_string(parse_index_notation("C[i,j]+=A[i,k]*B[k,j]", "i=1,j=1,k=1")),
            "C[i, j] += A[i, k] * B[k, j]");
  EXPECT_EQ(formula_string(parse_index_notation("D[i]=max(C[i]*2,0)-1.5e-7", "i=1")),
            "D[i] = max(C[i] * 2.0, 0.0) - 1.5e-07");
  EXPECT_EQ(extents_string(parse_index_notation("C[i,j]+=A[i,k]*B[k,j]", "k=3,j=2, i=1")),
            "i=1,j=2,k=3");
}

struct ErrorCase {
  const char* formula;
  const char* extents;
  const char* message;
};

TEST(IndexNotation, Errors) {
  const ErrorCase cases[] = {
      // Syntax.
      {"", "",
       "formula column 1: expected a statement such as 'C[i] = A[i]', found end of formula"},
      {"C[i,j] += A[i,k] * B[k j]", "i=1,j=1,k=1",
       "formula column 24: expected ',' or ']' after an index of 'B', found 'j'"},
      {"C[i+1] = A[i]", "i=2", "formula column 4: expected ',' or ']' after left-hand index 'i'"},
      {"C[i,i] = A[i]", "i=2", "formula column 5: index 'i' appears twice on the left of 'C'"},
      {"C[i] == A[i]", "i=2",
       "formula column 7: expected a number, a tensor access, a function call or '(', "
       "found '='"},
      {"C[i] -= A[i,k]", "i=2,k=2",
       "formula column 6: expected '=', '+=', 'max=' or 'min=' after 'C[...]', "
       "found '-'"},
      {"C(i) = A[i]", "i=2", "formula column 2: expected '[' after 'C', found '('"},
      {"[i] = A[i]", "i=2", "formula column 1: expected a tensor name, found '['"},
      {"C[i] = A[i] B[i]", "i=2",
       "formula column 13: expected ';' or end of formula after a statement, found 'B'"},
      {"C[i] = A[i] +", "i=2",
       "formula column 14: expected a number, a tensor access, a function call or '(', "
       "found end of formula"},
      {"C[i] = (A[i]", "i=2", "formula column 13: expected ')', found end of formula"},
      {"C[i] = A[i] @ 2", "i=2", "formula column 13: unexpected '@'"},
      {"C[i] = A[i]\n$", "i=2", "formula column 13: unexpected '$'"},
      {"C[i] = A[i] + \x01", "i=2", "formula column 15: unexpected character 0x01"},
      {"C[i] = foo(A[i])", "i=2", "formula column 8: unknown function 'foo'"},
      {"C[i] = exp(A[i], 1)", "i=2", "formula column 8: 'exp' takes 1 argument, found 2"},
      {"C[i] = max(A[i])", "i=2", "formula column 8: 'max' takes 2 arguments, found 1"},
      {"C[i] = max(A[i] 1)", "i=2",
       "formula column 17: expected ',' or ')' in the arguments of 'max', found '1'"},
      {"C[i] = x + A[i]", "i=2", "formula column 10: expected '[' or '(' after 'x', found '+'"},
      {"C[i] = A[i] * 1e", "i=2", "formula column 15: malformed number '1e'"},
      {"C[i] = A[i] * 1e50", "i=2", "formula column 15: number '1e50' does not fit in float32"},
      {"C[i] = A[i + 99999999999999999999]", "i=2",
       "formula column 14: integer '99999999999999999999' is too large"},
      {"C[i] = A[i + 9223372036854775807 + 1]", "i=2",
       "formula column 10: integer overflow in an index expression"},
      // Index expressions.
      {"C[h,w] = A[h*w]", "h=2,w=2",
       "formula column 12: index expression 'h*w' is not affine (it multiplies two indices)"},
      {"C[i] = A[i*(i+1)]", "i=2", "formula column 10: index expression 'i*(i+1)' is not affine"},
      {"C[i] = A[i/2]", "i=2", "formula column 11: '/' is not allowed in an index expression"},
      {"C[i] = A[i*1.5]", "i=2",
       "formula column 12: expected an integer in an index expression, found '1.5'"},
      {"C[i] = A[B[i]]", "i=2",
       "formula column 11: an index expression cannot contain a tensor access or call"},
      {"C[i] = A[,i]", "i=2",
       "formula column 10: expected an index name, an integer or '(' in an index expression, "
       "found ','"},
      {"C[h] = A[h-1]", "h=4", "formula column 10: index 'h-1' of 'A' can be negative"},
      {"C[h] = A[2 - h*1]", "h=4", "formula column 10: index '2 - h*1' of 'A' can be negative"},
      {"C[i] = A[i*3000000000]", "i=2",
       "formula column 10: index 'i*3000000000' of 'A' exceeds the 32-bit index range"},
      {"C[i] = A[i + 2147483647]", "i=2", "exceeds the 32-bit index range"},
      // Semantics.
      {"C[i] += A[i]", "i=2",
       "formula column 1: '+=' on 'C' needs a reduction index (an index that appears only on "
       "the right); use '=' for an element-wise statement"},
      {"C[i] max= A[i]", "i=2", "formula column 1: 'max=' on 'C' needs a reduction index"},
      {"C[i] min= A[i]", "i=2", "formula column 1: 'min=' on 'C' needs a reduction index"},
      {"C[i] = A[i]; C[i] = B[i]", "i=2",
       "formula column 14: 'C' is written twice (first at column 1)"},
      {"D[i] = C[i]; C[i] = A[i]", "i=2",
       "formula column 8: 'C' is read before it is written (at column 14)"},
      {"C[i] = C[i] + 1", "i=2", "formula column 8: 'C' is read in the statement that writes it"},
      {"C[i] = A[i] + A[i,i]", "i=2",
       "formula column 15: 'A' is used with 2 indices here but 1 at column 8"},
      {"C[i,j] = A[i,j]; D[i] = C[i]", "i=2,j=2",
       "formula column 25: 'C' is used with 1 index here but 2 at column 1"},
      {"C[i] = A[i]; D[i] = C[i+1]", "i=2",
       "formula column 23: index 'i+1' of 'C' can reach 2, outside its extent 2"},
      {"C[i] = i[i]", "i=2", "formula column 8: 'i' is used both as a tensor and as an index"},
      // Extents.
      {"C[i,j] += A[i,k]*B[k,j]", "i=2,j=2", "extents: no extent for index 'k'"},
      {"C[i,j] += A[i,k]*B[k,j]", "", "extents: no extent for index 'i'"},
      {"C[i] = A[i]", "i=2,z=3", "extents: 'z' is not an index of the formula"},
      {"C[i] = A[i]", "i 4", "extents column 3: expected '=' after 'i', found '4'"},
      {"C[i] = A[i]", "i", "extents column 2: expected '=' after 'i', found end of extents"},
      {"C[i] = A[i]", "i=", "extents column 3: expected an extent for 'i', found end of extents"},
      {"C[i] = A[i]", "i=,", "extents column 3: expected an extent for 'i', found ','"},
      {"C[i] = A[i]", "=4", "extents column 1: expected an index name, found '='"},
      {"C[i] = A[i]", "i=4,", "extents column 5: expected an index name, found end of extents"},
      {"C[i] = A[i]", "i=4 j=5", "extents column 5: expected ',' between extents, found 'j'"},
      {"C[i] = A[i]", "i=4,i=5", "extents column 5: duplicate extent for 'i' (first at column 1)"},
      {"C[i] = A[i]", "i=0", "extents column 3: extent of 'i' must be positive, found 0"},
      {"C[i] = A[i]", "i=-3", "extents column 3: extent of 'i' must be positive, found -3"},
      {"C[i] = A[i]", "i=1.5", "extents column 3: expected an integer extent for 'i', found '1.5'"},
      {"C[i] = A[i]", "i=4k", "extents column 3: expected an integer extent for 'i', found '4k'"},
      {"C[i] = A[i]", "i=99999999999",
       "extents column 3: extent of 'i' is too large (at most 2147483647)"},
      {"C[i] = A[i]", "i=4;j=2",
       "extents column 3: expected an integer extent for 'i', found '4;j'"},
      {"C[i] = A[i]", "i=\x02",
       "extents column 3: expected an integer extent for 'i', found character 0x02"},
  };
  for (const ErrorCase& c : cases) {
    std::string msg = parse_error(c.formula, c.extents);
    EXPECT_THAT(msg, HasSubstr(c.message))
        << "formula: " << c.formula << "   extents: " << c.extents;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(IndexNotation, DeepNestingIsRejectedNotACrash) {
  std::string parens = "C[i] = " + std::string(100000, '(') + "A[i]" + std::string(100000, ')');
  EXPECT_THAT(parse_error(parens, "i=2"), HasSubstr("nested too deeply"));
  std::string negs = "C[i] = " + std::string(100000, '-') + "A[i]";
  EXPECT_THAT(parse_error(negs, "i=2"), HasSubstr("nested too deeply"));
  std::string sum = "C[i] = A[i]";
  for (int k = 0; k < 100000; ++k) sum += "+A[i]";
  EXPECT_THAT(parse_error(sum, "i=2"), HasSubstr("nested too deeply"));
  std::string idx = "C[i] = A[" + std::string(100000, '(') + "i" + std::string(100000, ')') + "]";
  EXPECT_THAT(parse_error(idx, "i=2"), HasSubstr("nested too deeply"));
  std::string chain = "T0[i] = A[i]";
  for (int k = 1; k < 100000; ++k) chain += fmt::format("; T{}[i] = T{}[i]", k, k - 1);
  EXPECT_THAT(parse_error(chain, "i=2"), HasSubstr("too many statements (limit 1000)"));
  // Long but shallow index sums are fine.
  std::string wide = "C[i] = A[i";
  for (int k = 0; k < 1000; ++k) wide += "+i-i";
  wide += "]";
  EXPECT_EQ(parse_error(wide, "i=2"), "");
}

// Parses `formula` and, when it is accepted, lowers it and round-trips it through its canonical
// text. Anything but an InputError fails the test.
void check_robust(const std::string& formula, const std::string& extents) {
  IndexNotationProgram p;
  try {
    p = parse_index_notation(formula, extents);
  } catch (const InputError& e) {
    std::string msg = e.what();
    ASSERT_EQ(msg.find('\n'), std::string::npos) << msg;
    ASSERT_TRUE(msg.rfind("formula", 0) == 0 || msg.rfind("extents", 0) == 0) << msg;
    return;
  } catch (const std::exception& e) {
    FAIL() << "non-input error '" << e.what() << "' for formula: " << formula;
  }
  try {
    ir::PrimFunc f = to_prim_func(p);
    (void)ir::to_string(f);
    IndexNotationProgram q = parse_index_notation(formula_string(p), extents_string(p));
    ASSERT_EQ(formula_string(q), formula_string(p));
    ASSERT_EQ(q.input_shapes(), p.input_shapes());
  } catch (const std::exception& e) {
    FAIL() << "accepted formula failed later: '" << e.what() << "' for formula: " << formula;
  }
}

TEST(IndexNotation, FuzzRandomStrings) {
  std::mt19937_64 rng(1234);
  const std::string alphabet = "ABCijk[],;()+-*/= 0123456789.emaxinsqrtlogbd_\t\n#";
  const std::vector<std::string> pieces = {"C",    "A", "B",   "i",  "j",    "k",    "[",
                                           "]",    ",", ";",   "(",  ")",    "+",    "-",
                                           "*",    "/", "=",   "+=", "max=", "min=", "max(",
                                           "exp(", "2", "0.5", " ",  "h*2+", "1e3",  "sigmoid("};
  for (int n = 0; n < 3000; ++n) {
    std::string s;
    int len = static_cast<int>(rng() % 40);
    for (int k = 0; k < len; ++k) {
      if (n % 2)
        s += alphabet[rng() % alphabet.size()];
      else
        s += pieces[rng() % pieces.size()];
    }
    check_robust(s, "i=3,j=2,k=4");
    if (HasFatalFailure()) return;
  }
}

TEST(IndexNotation, FuzzMutatedFormulas) {
  std::mt19937_64 rng(99);
  const std::vector<std::string> seeds = {
      "C[i,j] += A[i,k] * B[k,j]; D[i,j] = max(C[i,j], 0.0)",
      "O[i,j] += I[i*2+k, j+k] * W[k,j]",
      "M[i] max= A[i,j]; E[i,j] = exp(A[i,j] - M[i]); S[i] += E[i,j]; Y[i,j] = E[i,j] / S[i]",
  };
  const std::string chars = "ijkABC[],;()+-*/=0123 .x";
  for (int n = 0; n < 3000; ++n) {
    std::string s = seeds[n % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s.erase(at, 1);
          break;
        case 1:
          s.insert(at, 1, chars[rng() % chars.size()]);
          break;
        default:
          s[at] = chars[rng() % chars.size()];
          break;
      }
    }
    check_robust(s, "i=3,j=2,k=4");
    if (HasFatalFailure()) return;
  }
}

TEST(IndexNotation, FuzzExtents) {
  std::mt19937_64 rng(7);
  const std::string chars = "ijk=,0123456789- x.";
  for (int n = 0; n < 3000; ++n) {
    std::string e = "i=3, j=2,k=4";
    if (n % 2) {
      e.clear();
      int len = static_cast<int>(rng() % 16);
      for (int k = 0; k < len; ++k) e += chars[rng() % chars.size()];
    } else {
      size_t at = rng() % e.size();
      if (rng() % 2)
        e.erase(at, 1);
      else
        e.insert(at, 1, chars[rng() % chars.size()]);
    }
    check_robust("C[i,j] += A[i,k] * B[k,j]", e);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace tyche::te
