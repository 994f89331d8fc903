// The strategies tensormem ships, in the order `plan --strategy all` lists
// them.
#ifndef TENSORMEM_SRC_PLAN_BUILTIN_STRATEGIES_H_
#define TENSORMEM_SRC_PLAN_BUILTIN_STRATEGIES_H_

#include <vector>

#include "tensormem/plan/strategy_registry.h"

namespace tensormem {

std::vector<StrategyInfo> BuiltinStrategies();

}  // namespace tensormem

#endif  // TENSORMEM_SRC_PLAN_BUILTIN_STRATEGIES_H_
