// The memory budget: every size a file's metadata implies is checked against it before
// anything is allocated, so a file of kilobytes cannot ask for gigabytes.
//
// The budget is process-wide (like a resource limit): the loaders and evaluate() consult it,
// and `lowp --max-memory` sets it. A refusal is a lowp::Error with one line naming the sizes
// that asked for the memory, e.g. "m.gguf: n_layers 80, dim 8192, ... need 260 GiB ...".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy {

// Physical memory of the machine in bytes (0 if the system does not say).
std::uint64_t physical_memory();
// Half the physical memory (8 GiB when unknown): the budget until set_max_memory is called.
std::uint64_t default_max_memory();
std::uint64_t max_memory();
// 0 restores the default.
void set_max_memory(std::uint64_t bytes);

// "<bytes>", or a number with a K/M/G/T suffix (powers of 1024, "1.5G"); lowp::Error otherwise.
std::uint64_t parse_memory_size(std::string_view text);
// "1.5 GiB", "300 MiB", "12 KiB", "100 B".
std::string format_memory_size(double bytes);

// Bytes of the model's float32 weights as the config implies them (classifier counted).
double weight_bytes(const LlamaConfig& c);

// Throws lowp::Error "<what> need(s) <size>, above the memory budget of <size> (--max-memory)"
// when bytes > max_memory().
void check_memory(double bytes, const std::string& what);

}  // namespace lowp::accuracy
