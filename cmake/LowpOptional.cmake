# lowp_optional_package(<Package> WITHOUT "<what is left out>" [DEBIAN <package>]
#                       [REQUIRES <Dependency>...] [<find_package arguments>...])
#
# Looks for an optional dependency; never stops configure. Sets LOWP_HAVE_<Package> to ON or
# OFF and prints one line either way:
#   -- lowp: optional dnnl found
#   -- lowp: optional dnnl not found (Debian package libdnnl-dev): bench_quant runs without ...
# Each REQUIRES dependency is looked for first, QUIET, because a package config that itself
# calls find_package(<Dependency> REQUIRED) ends configure with an error when that dependency
# is absent, QUIET or not (Debian's oneDNN config does this with OpenCL).
# A macro, not a function, so the package's own result variables reach the caller.
macro(lowp_optional_package _lop_name)
  cmake_parse_arguments(_lop "" "WITHOUT;DEBIAN" "REQUIRES" ${ARGN})
  set(_lop_missing "")
  foreach(_lop_dep IN LISTS _lop_REQUIRES)
    find_package(${_lop_dep} QUIET)
    if(NOT ${_lop_dep}_FOUND)
      list(APPEND _lop_missing ${_lop_dep})
    endif()
  endforeach()
  if(NOT _lop_missing)
    find_package(${_lop_name} ${_lop_UNPARSED_ARGUMENTS} QUIET)
  endif()
  set(_lop_how "")
  if(_lop_DEBIAN)
    set(_lop_how " (Debian package ${_lop_DEBIAN}; scripts/setup installs it)")
  endif()
  if(_lop_missing)
    set(LOWP_HAVE_${_lop_name} OFF)
    string(REPLACE ";" ", " _lop_missing "${_lop_missing}")
    message(STATUS "lowp: optional ${_lop_name} skipped, it needs ${_lop_missing}, not found${_lop_how}: ${_lop_WITHOUT}")
  elseif(${_lop_name}_FOUND)
    set(LOWP_HAVE_${_lop_name} ON)
    message(STATUS "lowp: optional ${_lop_name} found")
  else()
    set(LOWP_HAVE_${_lop_name} OFF)
    message(STATUS "lowp: optional ${_lop_name} not found${_lop_how}: ${_lop_WITHOUT}")
  endif()
endmacro()
