/* What arrays held by the application (hpl_array_vulkan_acquire) forbid
 * (acquired.c). */
#ifndef HPL_ACQUIRED_H
#define HPL_ACQUIRED_H

#include "engine.h"

/* Fails when an access to `box` of root (root coordinates) would race with
 * the application's work on an acquired buffer. */
int hpl__acquired_check(hpl_context *ctx, const hpl__array *root, const hpl__box *box, hpl_access access);
/* Is memory `slot` of root held by the application (not to be evicted)? */
bool hpl__acquired_holds(const hpl__array *root, int slot);
/* Fails when destroying a (a view, or a root) would free what the
 * application holds. */
int hpl__acquired_check_destroy(hpl_context *ctx, const hpl__array *a);
/* Logs a warning for each acquisition left (context destruction). */
void hpl__acquired_warn_left(hpl_context *ctx);

#endif
