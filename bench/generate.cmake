# bench_generate: `lowp generate`'s decode step (lowp::accuracy::Decoder, a KV cache): time per
# token across the positions 1..seq_len.
file(GLOB bench_generate_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/generate/*.cpp)
if(NOT bench_generate_src)
  return()
endif()
lowp_bench(bench_generate SOURCES ${bench_generate_src} LIBS lowp_accuracy)
target_link_libraries(bench_generate PRIVATE benchmark::benchmark_main)
target_compile_definitions(bench_generate PRIVATE LOWP_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
