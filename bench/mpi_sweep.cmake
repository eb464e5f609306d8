# bench_mpi_sweep: the model sweep split across MPI ranks against rank 0 alone (run it under
# `mpirun -np 2`, OMP_NUM_THREADS=1). Built when lowp is built with MPI.
if(NOT LOWP_WITH_MPI OR NOT EXISTS ${CMAKE_CURRENT_LIST_DIR}/mpi/bench_mpi_sweep.cpp)
  return()
endif()
lowp_bench(bench_mpi_sweep SOURCES ${CMAKE_CURRENT_LIST_DIR}/mpi/bench_mpi_sweep.cpp LIBS lowp_accuracy)
# The sweep's internal headers (sweep/split.hpp, dist/comm.hpp).
target_include_directories(bench_mpi_sweep PRIVATE ${PROJECT_SOURCE_DIR}/accuracy/src)
