# The installed package's version covers every symbol version node the
# library exports (src/rangelock.map): a program that uses the newest calls,
# in node RANGELOCK_X.Y, asks for X.Y and must get it, through
# find_package(rangelock X.Y) and pkg-config --atleast-version=X.Y; both
# report the header's RANGELOCK_VERSION_STRING; and the next minor version
# is refused (the check is not vacuous).  A library that exports
# RANGELOCK_0.3 calls while its package says 0.2.0 fails here.
# Included by run.cmake after the install: uses SRC, WORK, CC, stage,
# pcdir and run().
file(READ ${SRC}/src/rangelock.map rl_map)
string(REGEX MATCHALL "\nRANGELOCK_[0-9]+\\.[0-9]+ {" rl_nodes "${rl_map}")
list(GET rl_nodes -1 rl_newest)
string(REGEX MATCH "([0-9]+)\\.([0-9]+)" want "${rl_newest}")
math(EXPR next_minor "${CMAKE_MATCH_2} + 1")
set(too_new "${CMAKE_MATCH_1}.${next_minor}")
file(READ ${SRC}/include/rangelock/rangelock.h rl_header)
string(REGEX MATCH "RANGELOCK_VERSION_STRING \"([0-9.]+)\"" _ "${rl_header}")
set(have "${CMAKE_MATCH_1}")

function(find_version wanted dir)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC}/tests/consumer/find_version
      -B ${WORK}/${dir} -DWANT=${wanted} -DCMAKE_PREFIX_PATH=${stage}
      -DCMAKE_C_COMPILER=${CC}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc ${rc} PARENT_SCOPE)
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()
find_version(${want} fv-want)
if(NOT rc EQUAL 0 OR NOT out MATCHES "rangelock_VERSION=${have}\n")
  message(FATAL_ERROR "find_package(rangelock ${want}) failed or did not find "
    "${have}, although the library exports RANGELOCK_${want} calls: the "
    "version (CMakeLists.txt project(), rangelock.h) must cover the newest "
    "node of src/rangelock.map (tools/release.sh):\n${out}")
endif()
find_version(${too_new} fv-too-new)
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(rangelock ${too_new}) accepted ${have}:\n${out}")
endif()
message(STATUS "find_package(rangelock ${want}): ${have}; ${too_new} refused")

find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${pcdir}")
  run(${PKG_CONFIG} --atleast-version=${want} rangelock)
  run(${PKG_CONFIG} --modversion rangelock)
  string(STRIP "${last_output}" pc_version)
  if(NOT pc_version STREQUAL have)
    message(FATAL_ERROR "pkg-config --modversion rangelock says ${pc_version}, "
                        "rangelock.h says ${have}")
  endif()
  execute_process(COMMAND ${PKG_CONFIG} --atleast-version=${too_new} rangelock
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --atleast-version=${too_new} accepted ${have}")
  endif()
  message(STATUS "pkg-config --atleast-version=${want}: ${have}; ${too_new} refused")
endif()
