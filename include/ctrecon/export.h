/* ctrecon/export.h — CTR_API, the mark of every public function: libctrecon.so
 * is compiled with hidden visibility and exports exactly the functions marked
 * so (all named ctr_...); the static library carries the same objects.
 * Included by ctrecon/core.h. */
#ifndef CTRECON_EXPORT_H
#define CTRECON_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define CTR_API __attribute__((visibility("default")))
#else
#define CTR_API
#endif

#endif /* CTRECON_EXPORT_H */
