// The Scalify configuration's defaults: the paper's FP8 formats.
#include "recipe/scalify_config.hpp"

#include "lowp/formats/registry.hpp"

namespace lowp::accuracy::train {

ScalifyConfig::ScalifyConfig()
    : weight(parse_format("e4m3")), act(parse_format("e4m3")), grad(parse_format("e5m2")), fwd(act), bwd(grad) {}

}  // namespace lowp::accuracy::train
