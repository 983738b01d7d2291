# Build and run the C++ header's test with one C++ compiler, against the
# library of this build.  Run by ctest (tests/CMakeLists.txt), so that a
# C-only build never needs a C++ compiler: a missing one is a skip.
# cmake -DCXX=g++|clang++ -DSRC=<source> -DWORK=<dir> -DLIB=<librangelock file>
#       -DLIBS=<extra libraries> -P cxx.cmake
find_program(cxx_path ${CXX})
if(NOT cxx_path)
  message("SKIPPED: ${CXX} not found (Debian: apt-get install g++ clang)")
  return()
endif()
file(MAKE_DIRECTORY ${WORK})
get_filename_component(libdir "${LIB}" DIRECTORY)
set(extra "")
foreach(l ${LIBS})
  list(APPEND extra -l${l})
endforeach()
set(exe ${WORK}/test_rangelock_hpp_${CXX})
string(REPLACE "+" "x" exe "${exe}")
execute_process(
  COMMAND ${cxx_path} -std=c++17 -Wall -Wextra -Werror -O1
    -I${SRC}/include ${SRC}/tests/cxx/test_rangelock_hpp.cpp
    -o ${exe} ${LIB} -Wl,-rpath,${libdir} -pthread ${extra}
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CXX} failed to build the C++ test:\n${out}\n${err}")
endif()
execute_process(COMMAND ${exe} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "C++ test built by ${CXX} failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${CXX}: ${out}")
