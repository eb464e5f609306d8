// The cache of weights.calibrate's results (docs/calibration.md, "Cache"), in front of
// compute_calibrated_weights (model/calibrate.cpp): one file per key in the calibration text's
// cache directory, holding the key and ending with an FNV-1a checksum; a file that fails the
// check is ignored with a warning, recomputed and rewritten.
#pragma once
#include <cstddef>

#include "model/llama.hpp"

namespace lowp::accuracy::detail {

// compute_calibrated_weights, or its cached result (nothing cached without text.cache_dir and
// text.model_id).
CalibratedWeights calibrate_weights(const LlamaModel& model, const Recipe& recipe, const CalibrationText& text,
                                    std::size_t positions, int threads);

}  // namespace lowp::accuracy::detail
