# The public header under strict language modes: header_std.c compiled
# (-c, no link) as C89, gnu89, C99, C11 and C17 by gcc and clang, and as
# C++98, C++11 and C++17 by g++ and clang++, each with -pedantic -Wall
# -Wextra -Werror.  A compiler that is missing is skipped (and named); the
# test is skipped only if none is there.
# cmake -DSRC=<source> -DWORK=<dir> -P header_std.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ran 0)
set(failed "")
foreach(entry "gcc;c;c89,gnu89,c99,c11,c17" "clang;c;c89,gnu89,c99,c11,c17"
              "g++;c++;c++98,c++11,c++17" "clang++;c++;c++98,c++11,c++17")
  list(GET entry 0 compiler)
  list(GET entry 1 lang)
  list(GET entry 2 stds)
  string(REPLACE "," ";" stds "${stds}")
  find_program(cc_path_${compiler} NAMES ${compiler})
  set(cc_path ${cc_path_${compiler}})
  if(NOT cc_path)
    message(STATUS "${compiler}: not found, skipped")
    continue()
  endif()
  foreach(std ${stds})
    execute_process(COMMAND ${cc_path} -x ${lang} -std=${std} -pedantic -Wall -Wextra
                            -Werror -I${SRC}/include -c ${SRC}/tests/consumer/header_std.c
                            -o ${WORK}/header_std.o
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    math(EXPR ran "${ran} + 1")
    if(rc EQUAL 0)
      message(STATUS "${compiler} -std=${std} -pedantic -Werror: ok")
    else()
      message(STATUS "${compiler} -std=${std} -pedantic -Werror: FAILED\n${out}${err}")
      list(APPEND failed "${compiler} -std=${std}")
    endif()
  endforeach()
endforeach()
if(ran EQUAL 0)
  message(STATUS "SKIPPED: no gcc, clang, g++ or clang++ found")
elseif(failed)
  message(FATAL_ERROR "rangelock.h does not compile cleanly with: ${failed}")
endif()
