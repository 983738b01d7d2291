# The README's install with -DBUILD_TESTING=OFF: the two tools
# (rangelock-bench, rangelock-torture) are still built and installed, and
# no test is registered.  Only the installed targets are built.
# cmake -DSRC=<source> -DWORK=<dir> -DCC=<cc> -P tools_without_tests.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
run(${CMAKE_COMMAND} -S ${SRC} -B ${WORK}/build -DBUILD_TESTING=OFF
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=${CC})
foreach(target rangelock rangelock-bench rangelock-torture)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build -j2 --target ${target}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "with BUILD_TESTING=OFF, target ${target} does not build:\n${out}\n${err}")
  endif()
endforeach()
run(${CMAKE_COMMAND} --install ${WORK}/build --prefix ${WORK}/stage)
foreach(tool rangelock-bench rangelock-torture)
  if(NOT EXISTS ${WORK}/stage/bin/${tool})
    message(FATAL_ERROR "with BUILD_TESTING=OFF, ${tool} is not installed")
  endif()
endforeach()
get_filename_component(cmake_bin ${CMAKE_COMMAND} DIRECTORY)
execute_process(COMMAND ${cmake_bin}/ctest -N WORKING_DIRECTORY ${WORK}/build
                OUTPUT_VARIABLE out)
if(NOT out MATCHES "Total Tests: 0")
  message(FATAL_ERROR "with BUILD_TESTING=OFF, tests are registered:\n${out}")
endif()
message(STATUS "BUILD_TESTING=OFF: rangelock-bench and rangelock-torture installed, no test")
