# Consumer tests: build librangelock (LINKAGE shared or static), install it
# into a staging prefix, then build and run a program against it through
# find_package, through pkg-config, and through add_subdirectory.
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

# 1. build and install the library alone
run(${CMAKE_COMMAND} -S ${SRC} -B ${WORK}/lib -DBUILD_SHARED_LIBS=${shared}
    -DBUILD_TESTING=OFF -DRANGELOCK_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_C_COMPILER=${CC})
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

# 3. pkg-config (the .pc keeps the configure-time prefix: redefine it)
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
set(static_flag "")
if(NOT shared)
  set(static_flag --static)
endif()
run(pkg-config --define-variable=prefix=${stage} ${static_flag} --cflags --libs rangelock)
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
find_program(CXX NAMES c++ g++ clang++)
if(CXX)
  run(${CXX} -std=c++17 ${SRC}/tests/consumer/consumer.cpp -o ${WORK}/pc_consumer_cxx ${flags})
  run(${WORK}/pc_consumer_cxx)
  message(STATUS "pkg-config, C++: ${last_output}")
else()
  message(STATUS "pkg-config, C++: SKIPPED (no C++ compiler)")
endif()

# 4. add_subdirectory
run(${CMAKE_COMMAND} -S ${SRC}/tests/consumer/subdir -B ${WORK}/sub
    -DRANGELOCK_SOURCE_DIR=${SRC} -DBUILD_SHARED_LIBS=${shared} -DCMAKE_C_COMPILER=${CC})
run(${CMAKE_COMMAND} --build ${WORK}/sub -j2)
run(${WORK}/sub/consumer)
message(STATUS "add_subdirectory: ${last_output}")
if(EXISTS ${WORK}/sub/consumer_cxx)
  run(${WORK}/sub/consumer_cxx)
  message(STATUS "add_subdirectory, C++: ${last_output}")
endif()

# 5. a static consumer really contains no reference to the shared object
if(NOT shared)
  run(readelf -d ${WORK}/pc_consumer)
  if(last_output MATCHES "librangelock")
    message(FATAL_ERROR "static consumer links librangelock.so")
  endif()
endif()
message(STATUS "consumer tests (${LINKAGE}) passed")
