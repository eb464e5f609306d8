# bench_eval: teacher-forced Llama evaluation throughput and the recipe sweep.
file(GLOB bench_eval_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/eval/*.cpp)
if(NOT bench_eval_src)
  return()  # no benchmark sources yet
endif()
lowp_bench(bench_eval SOURCES ${bench_eval_src} LIBS lowp_accuracy)
target_link_libraries(bench_eval PRIVATE benchmark::benchmark_main)
