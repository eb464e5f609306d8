file(GLOB bench_hadamard_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/hadamard/*.cpp)
lowp_bench(bench_hadamard SOURCES ${bench_hadamard_src} LIBS lowp_hadamard)
target_link_libraries(bench_hadamard PRIVATE benchmark::benchmark_main OpenMP::OpenMP_CXX)
