/* SPDX-License-Identifier: MIT */
/*
 * The part of CMocka's API the unit tests use, for cross builds (i386,
 * aarch64, s390x) where no CMocka is installed for the target
 * (-DRANGELOCK_CMOCKA_LITE=ON).  Same output shape ("[ RUN ]", "[ OK ]",
 * "[ FAILED ]"), exit status = number of failed tests.  A failed assert
 * longjmps out of its test when on the main thread and ends the program
 * otherwise (CMocka's own behaviour off the main thread is exit 255).
 */
#ifndef CMOCKA_LITE_H
#define CMOCKA_LITE_H

#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CMUnitTest {
	const char *name;
	void (*test_func)(void **state);
	int (*setup_func)(void **state);     /* per test, may be NULL */
	int (*teardown_func)(void **state);
};
#define cmocka_unit_test(f) { #f, f, NULL, NULL }
#define cmocka_unit_test_setup_teardown(f, setup, teardown) \
	{ #f, f, setup, teardown }

static jmp_buf cmocka_lite_env;
static pthread_t cmocka_lite_main;
/* As CMocka's: run only the tests whose names match this glob. */
static const char *cmocka_lite_filter;

static inline void cmocka_set_test_filter(const char *pattern)
{
	cmocka_lite_filter = pattern;
}

static inline void print_message(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void print_message(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

static inline void print_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void print_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static inline __attribute__((noreturn)) void
cmocka_lite_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: error: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (!pthread_equal(pthread_self(), cmocka_lite_main))
		exit(255);
	longjmp(cmocka_lite_env, 1);
}

/* As CMocka's skip(): the test ends here, reported as skipped (exit
 * status 0 for it); only on the main thread. */
static inline __attribute__((noreturn)) void cmocka_lite_skip(const char *file, int line)
{
	if (!pthread_equal(pthread_self(), cmocka_lite_main)) {
		fprintf(stderr, "%s:%d: error: skip() off the main thread\n", file, line);
		exit(255);
	}
	longjmp(cmocka_lite_env, 2);
}
#define skip() cmocka_lite_skip(__FILE__, __LINE__)

#define fail_msg(...) cmocka_lite_fail(__FILE__, __LINE__, __VA_ARGS__)
#define fail() fail_msg("fail()")
#define assert_true(c) \
	do { if (!(c)) fail_msg("%s is not true", #c); } while (0)
#define assert_false(c) \
	do { if (c) fail_msg("%s is not false", #c); } while (0)
#define assert_non_null(p) \
	do { if (!(p)) fail_msg("%s is NULL", #p); } while (0)
#define assert_null(p) \
	do { if (p) fail_msg("%s is not NULL", #p); } while (0)
#define assert_ptr_equal(a, b) \
	do { const void *a_ = (a), *b_ = (b); \
	     if (a_ != b_) fail_msg("%p != %p", a_, b_); } while (0)
/* As CMocka: compared as unsigned, printed in decimal. */
#define assert_int_equal(a, b) \
	do { uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b); \
	     if (a_ != b_) fail_msg("%" PRIuMAX " != %" PRIuMAX, a_, b_); } while (0)
#define assert_in_range(v, lo, hi) \
	do { uintmax_t v_ = (uintmax_t)(v), lo_ = (uintmax_t)(lo), hi_ = (uintmax_t)(hi); \
	     if (v_ < lo_ || v_ > hi_) \
		     fail_msg("%" PRIuMAX " is not within [%" PRIuMAX ", %" PRIuMAX "]", \
			      v_, lo_, hi_); } while (0)
#define assert_string_equal(a, b) \
	do { const char *a_ = (a), *b_ = (b); \
	     if (strcmp(a_, b_)) fail_msg("\"%s\" != \"%s\"", a_, b_); } while (0)

#define cmocka_run_group_tests(tests, setup, teardown) \
	cmocka_lite_run(tests, sizeof(tests) / sizeof((tests)[0]))

static inline int cmocka_lite_run(const struct CMUnitTest *tests, size_t n)
{
	/* volatile: changed between setjmp and longjmp */
	volatile int failed = 0, skipped = 0;

	cmocka_lite_main = pthread_self();
	printf("[==========] Running %zu test(s).\n", n);
	for (volatile size_t i = 0; i < n; i++) {
		if (cmocka_lite_filter && fnmatch(cmocka_lite_filter, tests[i].name, 0))
			continue;
		printf("[ RUN      ] %s\n", tests[i].name);
		fflush(stdout);
		if (tests[i].setup_func && tests[i].setup_func(NULL)) {
			printf("[  ERROR   ] %s: setup failed\n", tests[i].name);
			failed++;
			continue;
		}
		switch (setjmp(cmocka_lite_env)) { /* (as C allows setjmp) */
		case 0:
			tests[i].test_func(NULL);
			if (tests[i].teardown_func)
				tests[i].teardown_func(NULL);
			printf("[       OK ] %s\n", tests[i].name);
			break;
		case 2: /* skip() */
			if (tests[i].teardown_func)
				tests[i].teardown_func(NULL);
			printf("[  SKIPPED ] %s\n", tests[i].name);
			skipped++;
			break;
		default:
			if (tests[i].teardown_func)
				tests[i].teardown_func(NULL);
			printf("[  FAILED  ] %s\n", tests[i].name);
			failed++;
		}
		fflush(stdout);
	}
	printf("[==========] %zu test(s) run, %d failed, %d skipped.\n", n, failed,
	       skipped);
	return failed;
}

#endif /* CMOCKA_LITE_H */
