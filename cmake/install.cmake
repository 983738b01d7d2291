# Installation: header, library with SONAME, CMake package, pkg-config file,
# manual pages.
include(CMakePackageConfigHelpers)

install(TARGETS rangelock EXPORT rangelockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rangelock
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Manual pages, generated from the header and committed (man/gen-man.sh):
# section 3 for every call (link pages are symbolic links), rangelock(7).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/man/man3 ${PROJECT_SOURCE_DIR}/man/man7
  DESTINATION ${CMAKE_INSTALL_MANDIR})

# The installed tools (rangelock-bench, rangelock-torture) find the shared
# library relative to themselves: runpath $ORIGIN/<bindir to libdir>, e.g.
# $ORIGIN/../lib, so they run from any prefix (--prefix, DESTDIR, a moved
# tree) with no LD_LIBRARY_PATH.  (CMake's default is to strip the build
# tree's runpath at install, leaving none: outside the loader's default
# directories the tools then did not start.)
function(rangelock_install_tool target)
  if(BUILD_SHARED_LIBS AND NOT APPLE AND NOT WIN32)
    file(RELATIVE_PATH rel "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
    set(rpath "$ORIGIN")
    if(rel)
      set(rpath "$ORIGIN/${rel}")
    endif()
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "${rpath}")
  endif()
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

set(RANGELOCK_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/rangelock)
install(EXPORT rangelockTargets NAMESPACE rangelock::
  DESTINATION ${RANGELOCK_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rangelockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rangelockConfig.cmake
  INSTALL_DESTINATION ${RANGELOCK_CMAKEDIR})
# Minor releases keep the ABI and API (docs/abi.md): a 0.1 request finds 0.2.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rangelockConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rangelockConfig.cmake
  ${PROJECT_BINARY_DIR}/rangelockConfigVersion.cmake
  DESTINATION ${RANGELOCK_CMAKEDIR})

# pkg-config: relocatable.  The prefix is found from where the file lies
# (${pcfiledir}, i.e. <prefix>/<libdir>/pkgconfig), so an install with
# `cmake --install build --prefix P` or a moved tree needs no
# --define-variable; libdir and includedir are relative to ${prefix}.  An
# absolute CMAKE_INSTALL_LIBDIR or INCLUDEDIR is kept absolute (and an
# absolute LIBDIR gives no way back to the prefix: the configured one).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(RANGELOCK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rangelock_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _rangelock_up "${_rangelock_up}")
  set(RANGELOCK_PC_PREFIX "\${pcfiledir}/${_rangelock_up}")
endif()
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(RANGELOCK_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(RANGELOCK_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
set(RANGELOCK_PC_LIBS_PRIVATE "")
if(CMAKE_DL_LIBS)
  set(RANGELOCK_PC_LIBS_PRIVATE "-l${CMAKE_DL_LIBS}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/rangelock.pc.in
  ${PROJECT_BINARY_DIR}/rangelock.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rangelock.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
