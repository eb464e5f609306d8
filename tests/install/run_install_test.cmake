# cmake -DBUILD_DIR=... -DWORK_DIR=... -DCONSUMER_SRC=... -DCONFIG=... -DGENERATOR=...
#       -DCXX_COMPILER=... [-DSANITIZE=...] -P run_install_test.cmake
# 1. cmake --install BUILD_DIR into WORK_DIR/prefix;
# 2. configure and build the consumer project against that prefix only, and run it;
# 3. run the installed `lowp` on the README example.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "ok: ${ARGN}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${CONFIG})

set(flags "")
if(SANITIZE)  # a sanitized lowp needs the sanitizer runtime in the consumer too
  set(flags "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${build} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${CONFIG}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix} ${flags})
# The package must come from the scratch prefix, not from some other installed copy.
file(STRINGS ${build}/CMakeCache.txt lowp_dir REGEX "^lowp_DIR:")
string(FIND "${lowp_dir}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "find_package(lowp) did not use ${prefix}: ${lowp_dir}")
endif()
run(${CMAKE_COMMAND} --build ${build} --config ${CONFIG})
run(${build}/lowp_consumer)

file(WRITE ${WORK_DIR}/input.txt "1000\n")
execute_process(COMMAND ${prefix}/bin/lowp cast --to float8_e5m2 INPUT_FILE ${WORK_DIR}/input.txt
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "0x64 1024\n")
  message(FATAL_ERROR "installed lowp: exit ${rc}, output '${out}', error '${err}'")
endif()
message(STATUS "installed lowp cast: ${out}")
