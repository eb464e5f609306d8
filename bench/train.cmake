# bench_train: one optimizer step of the default training config under each recipe.
file(GLOB bench_train_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/train/*.cpp)
if(NOT bench_train_src)
  return()
endif()
lowp_bench(bench_train SOURCES ${bench_train_src} LIBS lowp_accuracy)
target_link_libraries(bench_train PRIVATE benchmark::benchmark_main)
# The trainer's internal headers (train/llama_train.hpp).
target_include_directories(bench_train PRIVATE ${PROJECT_SOURCE_DIR}/accuracy/src)
