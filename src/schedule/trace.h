// A trace: the instructions a schedule applied, with the decisions of its sampling instructions
// kept beside them, so it is a re-samplable program template. Host control flow leaves no mark.
// A trace replays onto a fresh schedule with its recorded decisions, fresh ones, or overrides;
// it round-trips through JSON and through a Python-like text form a person can write.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schedule/error.h"
#include "schedule/instruction.h"

namespace tyche::schedule {

struct Instruction {
  const InstructionKind* kind = nullptr;
  std::vector<Value> args;     // one per parameter of kind
  std::vector<Value> outputs;  // RV values (ids local to the trace)
  int line = 0;                // source line when parsed from text, else 0

  bool is(const InstructionKind& k) const { return kind == &k; }
  // The argument of the parameter named `param` (e.g. arg("factors") of a split); throws
  // InternalError if the kind has no such parameter.
  const Value& arg(std::string_view param) const;
};

struct ReplayOptions {
  // Draw every decision afresh instead of using the recorded ones.
  bool fresh_decisions = false;
  // Decisions by instruction index, taking precedence over both.
  std::map<size_t, Value> overrides = {};
  // Replay only the instructions before this index (a prefix of the trace).
  size_t stop_before = SIZE_MAX;
  // When set, receives trace-local handle id -> the handle issued in the schedule.
  std::unordered_map<int64_t, Value>* handles = nullptr;
};

class Trace {
 public:
  static constexpr int kFormatVersion = 1;

  const std::vector<Instruction>& instructions() const { return insts_; }
  // Decisions of sampling instructions, by instruction index.
  const std::map<size_t, Value>& decisions() const { return decisions_; }
  size_t size() const { return insts_.size(); }

  void append(Instruction inst, Value decision = Value::none());
  // Without pure instructions (lookups, samplings) whose outputs nothing uses.
  Trace simplified() const;
  // The same trace with instruction `index`'s decision replaced; throws InputError if that
  // instruction does not sample or the decision has the wrong shape.
  Trace with_decision(size_t index, Value decision) const;

  // The same trace with argument `param` of instruction `index` replaced (e.g. an annotation's
  // ann_val); throws InputError if the index is out of range, the kind has no such parameter or
  // the value does not fit it.
  Trace with_argument(size_t index, std::string_view param, Value value) const;

  // Replays the trace onto `sch` (normally fresh). A failure names the instruction (and its
  // line when parsed from text) and why, e.g. a recorded decision no longer legal.
  Status apply_to(class Schedule& sch, const ReplayOptions& options = {}) const;

  // JSON carrying {"format": "tyche.trace", "version": 1, "instructions": [...]}; handles are
  // renamed b0, l1, v2... in order of definition, so equal traces give identical text.
  std::string to_json(int indent = -1) const;
  // Throws InputError on malformed JSON, an unknown instruction or version, or a bad argument.
  static Trace from_json(std::string_view json);

  // One instruction per line in a Python subset, e.g.
  //   l6, l7 = sch.split(loop=l1, factors=[v4, v5])
  std::string to_text() const;
  // Parses the text form; throws InputError naming the line and column.
  static Trace parse_text(std::string_view text);
  // JSON if the text starts with '{', the text form otherwise.
  static Trace parse(std::string_view text_or_json);

 private:
  static Trace from_json_unchecked(std::string_view json);

  std::vector<Instruction> insts_;
  std::map<size_t, Value> decisions_;
};

// `func` with the trace in file `path` (text form or JSON) applied; sampling instructions that
// carry no decision draw from `seed`. Throws tyche::Error naming the file when it cannot be read,
// does not parse, or a primitive refuses.
ir::PrimFunc apply_trace_file(const ir::PrimFunc& func, const std::string& path, int64_t seed = 0);

}  // namespace tyche::schedule
