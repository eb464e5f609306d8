# bench_decode: one decode step (lowp::accuracy::Decoder) on the 85M shape with its weights in
# each stored type, as weight bytes read per second against a memcpy of the same bytes.
file(GLOB bench_decode_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/decode/*.cpp)
if(NOT bench_decode_src)
  return()
endif()
lowp_bench(bench_decode SOURCES ${bench_decode_src} LIBS lowp_accuracy OpenMP::OpenMP_CXX)
target_link_libraries(bench_decode PRIVATE benchmark::benchmark_main)
# The floor's kernels use each ISA's intrinsics (each run only where lowp runs that ISA's lane dots).
lowp_isa_sources(AVX512 ${CMAKE_CURRENT_LIST_DIR}/decode/decode_floor_avx512.cpp)
lowp_isa_sources(AVX2 ${CMAKE_CURRENT_LIST_DIR}/decode/decode_floor_avx2.cpp)
