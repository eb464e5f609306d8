lowp_bench(bench_formats SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_formats.cpp LIBS lowp_formats)
target_link_libraries(bench_formats PRIVATE benchmark::benchmark_main)
