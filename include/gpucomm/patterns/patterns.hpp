#pragma once
// The pattern layer (docs/PATTERNS.md): declarative transfers compiled into plans.
#include "gpucomm/patterns/model.hpp"
#include "gpucomm/patterns/pattern.hpp"
#include "gpucomm/patterns/plan.hpp"
#include "gpucomm/patterns/prebuilt.hpp"
#include "gpucomm/patterns/region.hpp"
#include "gpucomm/patterns/schedule.hpp"
