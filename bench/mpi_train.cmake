# bench_mpi_train: a data-parallel training step under `mpirun -np 2` against one rank doing it all.
if(LOWP_WITH_MPI AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/mpi/bench_mpi_train.cpp)
  lowp_bench(bench_mpi_train SOURCES ${CMAKE_CURRENT_LIST_DIR}/mpi/bench_mpi_train.cpp LIBS lowp_accuracy)
  target_include_directories(bench_mpi_train PRIVATE ${PROJECT_SOURCE_DIR}/accuracy/src)
endif()
