# Consumer tests: build librangelock (LINKAGE shared or static), install it
# into a staging prefix, then build and run a program against it through
# find_package, through pkg-config (skipped when pkg-config is missing), and
# vendored into a parent project that has tests of its own, through
# add_subdirectory and through FetchContent: there CMocka is hidden from
# pkg-config, and the parent's ctest must list its own test only.
# cmake -DSRC=<source> -DWORK=<dir> -DLINKAGE=shared|static -DCC=<cc> -P run.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

if(LINKAGE STREQUAL "shared")
  set(shared ON)
else()
  set(shared OFF)
endif()
set(stage ${WORK}/stage)
file(REMOVE_RECURSE ${WORK})
# Every build here at -O0 (build types kept, -DNDEBUG too): this test checks
# how the library is found and linked, not its code, and -O0 compiles in a
# third of the time of -O2 -g.
set(fast_build "-DCMAKE_C_FLAGS_RELEASE=-O0 -DNDEBUG"
               "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O0 -DNDEBUG")

# 1. build and install the library alone
run(${CMAKE_COMMAND} -S ${SRC} -B ${WORK}/lib -DBUILD_SHARED_LIBS=${shared}
    -DBUILD_TESTING=OFF -DRANGELOCK_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release
    ${fast_build} -DCMAKE_C_COMPILER=${CC})
run(${CMAKE_COMMAND} --build ${WORK}/lib -j2)
run(${CMAKE_COMMAND} --install ${WORK}/lib --prefix ${stage})
file(GLOB_RECURSE pcfile ${stage}/*/rangelock.pc)
get_filename_component(pcdir "${pcfile}" DIRECTORY)
get_filename_component(libdir "${pcdir}" DIRECTORY)
set(ENV{LD_LIBRARY_PATH} "${libdir}")

# 2. find_package
run(${CMAKE_COMMAND} -S ${SRC}/tests/consumer/find_package -B ${WORK}/fp
    -DCMAKE_PREFIX_PATH=${stage} -DCMAKE_C_COMPILER=${CC})
run(${CMAKE_COMMAND} --build ${WORK}/fp)
run(${WORK}/fp/consumer)
message(STATUS "find_package: ${last_output}")
if(EXISTS ${WORK}/fp/consumer_cxx)
  run(${WORK}/fp/consumer_cxx)
  message(STATUS "find_package, C++: ${last_output}")
else()
  message(STATUS "find_package, C++: SKIPPED (no C++ compiler)")
endif()

# 2b. the version: find_package and pkg-config give the newest calls' X.Y
include(${CMAKE_CURRENT_LIST_DIR}/versions.cmake)

# 3. pkg-config, as a user would call it: the library was configured for
# /usr/local and installed elsewhere, so the .pc file must find its prefix
# from where it lies (${pcfiledir}), with no --define-variable.
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: the pkg-config consumer is skipped "
                 "(Debian package: pkgconf)")
else()
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
set(static_flag "")
if(NOT shared)
  set(static_flag --static)
endif()
foreach(var includedir libdir)
  run(${PKG_CONFIG} --variable=${var} rangelock)
  string(STRIP "${last_output}" dir)
  get_filename_component(dir "${dir}" REALPATH)
  get_filename_component(real_stage "${stage}" REALPATH)
  string(FIND "${dir}/" "${real_stage}/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "pkg-config: ${var} is ${dir}, not under the prefix ${stage}")
  endif()
  set(pc_${var} "${dir}")
endforeach()
run(${PKG_CONFIG} ${static_flag} --cflags --libs rangelock)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
if(NOT shared)
  # Make sure the static archive, not a stray shared object, is used.
  list(PREPEND flags -Wl,-Bstatic)
  list(APPEND flags -Wl,-Bdynamic)
endif()
run(${CC} ${SRC}/tests/consumer/consumer.c -o ${WORK}/pc_consumer ${flags})
run(${WORK}/pc_consumer)
message(STATUS "pkg-config: ${last_output}")
# The header in strict ISO C, with no POSIX feature macro (nor -pthread,
# which makes glibc declare struct timespec): no warning.
run(${CC} -std=c99 -Wall -Wextra -Werror -I${pc_includedir} -c
    ${SRC}/tests/consumer/consumer.c -o ${WORK}/pc_consumer_c99.o)
message(STATUS "the header with -std=c99 -Wall -Wextra -Werror: no warning")
if(NOT shared)
  # A plugin built on the installed librangelock.a (PIC, so that it links
  # into a shared object), dlopen()ed, read fast on a worker thread and
  # dlclose()d before that thread exits (tests/plugin/host.c).
  run(${CC} -shared -fPIC -fvisibility=hidden ${SRC}/tests/plugin/plugin.c
      -o ${WORK}/plugin.so ${flags})
  run(${CC} ${SRC}/tests/plugin/host.c -o ${WORK}/plugin_host -pthread -ldl)
  run(${WORK}/plugin_host ${WORK}/plugin.so f 1)
  message(STATUS "static copy in a plugin: ${last_output}")
endif()
find_program(CXX NAMES c++ g++ clang++)
if(CXX)
  run(${CXX} -std=c++17 ${SRC}/tests/consumer/consumer.cpp -o ${WORK}/pc_consumer_cxx ${flags})
  run(${WORK}/pc_consumer_cxx)
  message(STATUS "pkg-config, C++: ${last_output}")
else()
  message(STATUS "pkg-config, C++: SKIPPED (no C++ compiler)")
endif()
endif()

# 4. vendored: add_subdirectory and FetchContent, into a parent project with
# include(CTest) and BUILD_TESTING ON, CMocka hidden from pkg-config.
file(MAKE_DIRECTORY ${WORK}/no-pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_LIBDIR} "${WORK}/no-pkgconfig")
foreach(way subdir fetchcontent)
  run(${CMAKE_COMMAND} -S ${SRC}/tests/consumer/${way} -B ${WORK}/${way}
      -DBUILD_TESTING=ON -DRANGELOCK_SOURCE_DIR=${SRC}
      -DFETCHCONTENT_SOURCE_DIR_RANGELOCK=${SRC}
      -DBUILD_SHARED_LIBS=${shared} ${fast_build} -DCMAKE_C_COMPILER=${CC})
  run(${CMAKE_COMMAND} --build ${WORK}/${way} -j2)
  run(${WORK}/${way}/consumer)
  message(STATUS "${way}: ${last_output}")
  if(EXISTS ${WORK}/${way}/consumer_cxx)
    run(${WORK}/${way}/consumer_cxx)
    message(STATUS "${way}, C++: ${last_output}")
  endif()
  get_filename_component(cmake_bin ${CMAKE_COMMAND} DIRECTORY)
  execute_process(COMMAND ${cmake_bin}/ctest -N WORKING_DIRECTORY ${WORK}/${way}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE last_output ERROR_VARIABLE err)
  if(NOT last_output MATCHES "Total Tests: 1\n" OR
     NOT last_output MATCHES "parent_consumer_runs")
    message(FATAL_ERROR "${way}: the parent's ctest lists more than its own test:\n"
                        "${last_output}")
  endif()
  file(GLOB_RECURSE programs ${WORK}/${way}/rangelock-torture ${WORK}/${way}/rangelock-bench
       ${WORK}/${way}/parallel_writer ${WORK}/${way}/address_space_*)
  if(programs)
    message(FATAL_ERROR "${way}: librangelock's programs were built: ${programs}")
  endif()
  message(STATUS "${way}: ctest -N lists the parent's test only")
endforeach()

# 5. a static consumer really contains no reference to the shared object
if(NOT shared)
  run(readelf -d ${WORK}/pc_consumer)
  if(last_output MATCHES "librangelock")
    message(FATAL_ERROR "static consumer links librangelock.so")
  endif()
endif()
message(STATUS "consumer tests (${LINKAGE}) passed")
