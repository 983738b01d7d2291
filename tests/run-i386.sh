#!/usr/bin/env bash
# Test launcher of the i386 presets (CMAKE_CROSSCOMPILING_EMULATOR): run the
# program natively where the kernel runs 32-bit x86 programs, else under
# qemu-i386 (some VMs and sandboxes have no ia32 emulation).
if /lib/ld-linux.so.2 --version >/dev/null 2>&1; then
	exec "$@"
fi
# qemu-user aborts on a thread created in the child of a multi-threaded
# fork(): tests that would do so read this and skip that step.
export RANGELOCK_TEST_UNDER_QEMU=1
exec qemu-i386 "$@"
