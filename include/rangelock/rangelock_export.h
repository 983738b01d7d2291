/* SPDX-License-Identifier: MIT */
/* RANGELOCK_API marks the public calls: the library is built with hidden
 * visibility, so only these are exported from librangelock.so. */
#ifndef RANGELOCK_EXPORT_H
#define RANGELOCK_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RANGELOCK_API __attribute__((visibility("default")))
#else
#define RANGELOCK_API
#endif

#endif /* RANGELOCK_EXPORT_H */
