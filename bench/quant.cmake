# bench_quant: int8 / fp32 GEMMs, linear-layer steps and MX / NVFP4 quantization, one binary.
# oneDNN (Debian's libdnnl-dev) is the field's int8 reference: linked here only, when found.
file(GLOB bench_quant_src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/quant/*.cpp)
# bench_gptq: GPTQ on a 4096 x 4096 linear (issue 22), its own binary with Google Benchmark's main.
list(FILTER bench_quant_src EXCLUDE REGEX "/bench_gptq\\.cpp$")
lowp_bench(bench_gptq SOURCES ${CMAKE_CURRENT_LIST_DIR}/quant/bench_gptq.cpp LIBS lowp_quant)
if(NOT bench_quant_src)
  return()  # no benchmark sources yet
endif()
lowp_bench(bench_quant SOURCES ${bench_quant_src} LIBS lowp_quant)
target_link_libraries(bench_quant PRIVATE OpenMP::OpenMP_CXX Eigen3::Eigen)
lowp_optional_package(dnnl CONFIG REQUIRES OpenCL DEBIAN libdnnl-dev
  WITHOUT "bench_quant runs without BM_gemm_onednn_s8s8")
if(LOWP_HAVE_dnnl)
  target_link_libraries(bench_quant PRIVATE DNNL::dnnl)
  target_compile_definitions(bench_quant PRIVATE LOWP_HAVE_ONEDNN=1)
endif()
