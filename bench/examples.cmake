# The example programs (see docs/examples.md).  All use only the public
# header <rangelock/rangelock.h>, check their own results and double as
# benchmarks: a short run of each is a ctest entry.
#
#   parallel_writer          threads update extents of one file under
#                            byte-range locks; compared with a mutex and an
#                            rwlock; --broken proves the tear check works.
#   address_space_<mode>     a toy address-space manager whose lock wrappers
#                            are chosen at compile time (AS_LOCK_MODE): one
#                            pthread_rwlock, a full-range range lock, or
#                            narrowed ranges.

add_executable(parallel_writer ${CMAKE_CURRENT_LIST_DIR}/parallel_writer.c)
# async_server: one epoll loop serves many clients' range requests through
# asynchronous requests while threads write under blocking locks (Linux:
# epoll, eventfd, timerfd).
add_executable(async_server ${CMAKE_CURRENT_LIST_DIR}/async_server.c)
target_link_libraries(async_server PRIVATE rangelock::rangelock Threads::Threads)
target_link_libraries(parallel_writer PRIVATE rangelock::rangelock Threads::Threads)

# One source, three lock wrappers, as the mmap_sem RFC's CONFIG_MEM_RANGE_LOCK;
# a fourth build without any lock shows that the self-checks catch races.
set(RANGELOCK_AS_MODES rwlock full narrow)
set(_as_mode_value_none 0)
set(_as_mode_value_rwlock 1)
set(_as_mode_value_full 2)
set(_as_mode_value_narrow 3)
foreach(mode IN LISTS RANGELOCK_AS_MODES ITEMS none)
  add_executable(address_space_${mode} ${CMAKE_CURRENT_LIST_DIR}/address_space.c)
  target_compile_definitions(address_space_${mode} PRIVATE
    AS_LOCK_MODE=${_as_mode_value_${mode}})
  target_link_libraries(address_space_${mode} PRIVATE rangelock::rangelock Threads::Threads)
endforeach()

# Examples are built and tested, not installed: generic names have no
# place in users' PATH (rangelock-bench and rangelock-torture are).

if(RANGELOCK_TESTING)
  # A short comparison run: range lock, mutex and rwlock, all checked.
  add_test(NAME example_parallel_writer
           COMMAND parallel_writer --duration 1 --quiet)
  # Without any lock the checks must find torn extents: exit 1 expected.
  # A small file makes extents collide often; the run stops at the first tear.
  add_test(NAME example_parallel_writer_broken
           COMMAND parallel_writer --broken --file-size 1M --min-extent 512
                   --duration 5 --quiet)
  set_tests_properties(example_parallel_writer_broken PROPERTIES WILL_FAIL TRUE)
  set_tests_properties(example_parallel_writer example_parallel_writer_broken
                       PROPERTIES TIMEOUT 60 LABELS example)
  # The event loop beside blocking writers, checked; and without its
  # locks, where the checks must fail (exit 1).
  add_test(NAME example_async_server
           COMMAND async_server --duration 1 --clients 64 --writers 2
                   --slow-writes 20 --deadline-ms 1 --quiet)
  add_test(NAME example_async_server_broken
           COMMAND async_server --duration 2 --clients 64 --writers 2 --no-lock --quiet)
  set_tests_properties(example_async_server_broken PROPERTIES WILL_FAIL TRUE)
  set_tests_properties(example_async_server example_async_server_broken
                       PROPERTIES TIMEOUT 60 LABELS example)
  foreach(mode IN LISTS RANGELOCK_AS_MODES)
    # 20% of the faults go where regions change, and two mappers change
    # regions at once, to exercise the checks.
    add_test(NAME example_address_space_${mode}
             COMMAND address_space_${mode} --duration 1 --churn-faults 20
                     --mappers 2)
    set_tests_properties(example_address_space_${mode} PROPERTIES
                         TIMEOUT 60 LABELS example)
  endforeach()
  # No lock at all: faults must see half-mapped regions and exit 1.
  add_test(NAME example_address_space_none
           COMMAND address_space_none --duration 2 --churn-faults 20
                   --mappers 2)
  set_tests_properties(example_address_space_none PROPERTIES
                       WILL_FAIL TRUE TIMEOUT 60 LABELS example)
endif()
