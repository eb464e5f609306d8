// Writers of the sweep results: an aligned table (stdout), CSV, JSON and a self-contained SVG
// chart. The CSV columns and JSON keys are a contract, documented in docs/sweep.md. Numbers in
// CSV and JSON are exact (the shortest decimal that reads back as the double); JSON writes
// a non-finite number as null, CSV as nan / inf / -inf.
#pragma once
#include <iosfwd>
#include <span>

#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/tensor_sweep.hpp"

namespace lowp::accuracy {

// Tensor sweep: one table per distribution, a row per spec, SQNR / MSE / max error per rotation.
void write_tensor_sweep_table(std::ostream& out, std::span<const TensorSweepRow> rows, const TensorSweepOptions& opt);
void write_tensor_sweep_csv(std::ostream& out, std::span<const TensorSweepRow> rows);
void write_tensor_sweep_json(std::ostream& out, std::span<const TensorSweepRow> rows, const TensorSweepOptions& opt);
// Horizontal bars of SQNR (dB) per spec, one bar per rotation, one panel per distribution.
void write_tensor_sweep_svg(std::ostream& out, std::span<const TensorSweepRow> rows, const TensorSweepOptions& opt);

// Model sweep: the recipes in the sweep's order (by mean KLD).
void write_model_sweep_table(std::ostream& out, const ModelSweep& s);
// The per-layer SQNR attribution: recipe, layer, quantization point, SQNR dB, values, nonfinite.
void write_model_sweep_layers(std::ostream& out, const ModelSweep& s);
void write_model_sweep_csv(std::ostream& out, const ModelSweep& s);
void write_model_sweep_json(std::ostream& out, const ModelSweep& s);
// Horizontal bars of mean KLD (log scale) and PPL per recipe.
void write_model_sweep_svg(std::ostream& out, const ModelSweep& s);

}  // namespace lowp::accuracy
