# Runtime SIMD dispatch with xsimd 8.1: each architecture's kernels live in their own
# translation unit compiled with that architecture's flags; everything else is built for
# the baseline x86-64, so the binary runs on any x86-64 and picks the best ISA at run time.
set(LOWP_FLAGS_AVX2 -mavx2 -mfma -mbmi2 -mf16c)
set(LOWP_FLAGS_AVX512 -mavx512f -mavx512bw -mavx512dq -mavx512cd -mavx512vl -mavx2 -mfma -mbmi2 -mf16c)
# GCC's generic tuning copies a spilled array of 256-bit registers (a kernel's accumulators)
# 16 bytes at a time, and a 32-byte reload of two 16-byte stores misses store forwarding.
# Every CPU that runs the AVX2 kernels moves 32 bytes at once. (Clang has no such option.)
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-mmove-max=256 LOWP_HAVE_MOVE_MAX)
if(LOWP_HAVE_MOVE_MAX)
  list(APPEND LOWP_FLAGS_AVX2 -mmove-max=256 -mstore-max=256)
endif()

# lowp_isa_sources(<ISA> file... [OPTIONS option...]): compile the files with ISA's flags (AVX2
# or AVX512), after the given options (which apply under LOWP_NATIVE too).
function(lowp_isa_sources isa)
  cmake_parse_arguments(arg "" "" "OPTIONS" ${ARGN})
  set(flags ${arg_OPTIONS})
  if(NOT (LOWP_NATIVE AND isa MATCHES "^AVX"))  # -march=native already covers these
    list(APPEND flags ${LOWP_FLAGS_${isa}})
  endif()
  if(flags)
    set_source_files_properties(${arg_UNPARSED_ARGUMENTS} PROPERTIES COMPILE_OPTIONS "${flags}")
  endif()
endfunction()

# Files that use instructions xsimd 8.1 lacks (int8 dot products, AMX tiles): named
# *_vnni.cpp and *_amx.cpp, called only after a runtime check of the CPU (and, for AMX,
# of the kernel's permission).
set(LOWP_FLAGS_VNNI ${LOWP_FLAGS_AVX512} -mavx512vnni)
set(LOWP_FLAGS_AMX ${LOWP_FLAGS_AVX512} -mavx512vnni -mamx-tile -mamx-int8)
