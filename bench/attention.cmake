# bench_attention: FlashAttention-3's FP8 numerical-error experiment with lowp's attention
# quantization points (RMSE against float64 attention as counters, and the time of each path).
file(GLOB bench_attention_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/attention/*.cpp)
if(NOT bench_attention_src)
  return()
endif()
lowp_bench(bench_attention SOURCES ${bench_attention_src} LIBS lowp_accuracy)
target_link_libraries(bench_attention PRIVATE benchmark::benchmark_main OpenMP::OpenMP_CXX)
