// The explicit table of instruction kinds. Adding a primitive: define its kind beside the
// primitive (TYCHE_INSTRUCTION, instruction_impl.h) and add its name to TYCHE_INSTRUCTION_KINDS
// (instruction.h).
#include "schedule/instruction.h"

namespace tyche::schedule {

const std::vector<const InstructionKind*>& instruction_kinds() {
#define TYCHE_KIND_ENTRY(name) &kind_##name(),
  static const std::vector<const InstructionKind*> table = {
      TYCHE_INSTRUCTION_KINDS(TYCHE_KIND_ENTRY)};
#undef TYCHE_KIND_ENTRY
  return table;
}

}  // namespace tyche::schedule
