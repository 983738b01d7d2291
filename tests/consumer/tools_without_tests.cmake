# The README's install with -DBUILD_TESTING=OFF: the two tools
# (rangelock-bench, rangelock-torture) are still built and installed, and
# no test is registered.  Only the installed targets are built.  The
# installed tools then run from the staging prefix, and again after the
# whole prefix is moved, with no LD_LIBRARY_PATH: their runpath is relative
# ($ORIGIN/../<libdir>).  The libdir is a two-level one, as Debian's
# multiarch lib/<triplet>, so that the relative path is not just "../lib".
# cmake -DSRC=<source> -DWORK=<dir> -DCC=<cc> -P tools_without_tests.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
# Release at -O0 (-DNDEBUG kept): this test checks what is built, installed
# and run from where, not the code; -O0 compiles in a third of the time.
run(${CMAKE_COMMAND} -S ${SRC} -B ${WORK}/build -DBUILD_TESTING=OFF
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O0 -DNDEBUG" -DCMAKE_C_COMPILER=${CC}
    -DCMAKE_INSTALL_LIBDIR=lib/multiarch-test)
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

# The installed tools start from the prefix, and from anywhere it is moved
# to, without LD_LIBRARY_PATH: a quick invocation of each.
unset(ENV{LD_LIBRARY_PATH})
function(run_tools prefix)
  foreach(cmd "rangelock-bench;--help"
              "rangelock-torture;--readers=1;--writers=1;--duration=0.2")
    list(POP_FRONT cmd tool)
    execute_process(COMMAND ${prefix}/bin/${tool} ${cmd} RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "the installed ${tool} (${prefix}/bin) does not run "
                          "(${rc}):\n${out}\n${err}")
    endif()
  endforeach()
  if(NOT out MATCHES "End of test: SUCCESS")
    message(FATAL_ERROR "the installed rangelock-torture did not succeed:\n${out}")
  endif()
endfunction()
run_tools(${WORK}/stage)
file(RENAME ${WORK}/stage ${WORK}/moved)
run_tools(${WORK}/moved)
message(STATUS "installed rangelock-bench and rangelock-torture run from the prefix and a moved copy")

get_filename_component(cmake_bin ${CMAKE_COMMAND} DIRECTORY)
execute_process(COMMAND ${cmake_bin}/ctest -N WORKING_DIRECTORY ${WORK}/build
                OUTPUT_VARIABLE out)
if(NOT out MATCHES "Total Tests: 0")
  message(FATAL_ERROR "with BUILD_TESTING=OFF, tests are registered:\n${out}")
endif()
message(STATUS "BUILD_TESTING=OFF: rangelock-bench and rangelock-torture installed, no test")
