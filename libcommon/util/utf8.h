/* SPDX-License-Identifier: MIT
 * UTF-8 validation and JSON string escaping: the one validator and the
 * one escaper of the library.
 */
#ifndef SP_UTIL_UTF8_H
#define SP_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

struct sp_buf;

/*
 * Length of the valid UTF-8 sequence at p (n > 0 bytes available), or 0
 * when it is not one: overlong forms, surrogates and values past
 * U+10FFFF are not valid.
 */
size_t sp_utf8_len(const unsigned char *p, size_t n);

/* Whether all n bytes at p are valid UTF-8. */
bool sp_utf8_valid(const void *p, size_t n);

/*
 * Appends s (n bytes) to b as a quoted JSON string: quote, backslash and
 * control characters escaped; a byte that does not start a valid UTF-8
 * sequence becomes \u00XX (the byte read as Latin-1), so the output is
 * always valid JSON.
 */
void sp_json_escape(struct sp_buf *b, const char *s, size_t n);

/*
 * Sets b to s (n bytes) with every byte that does not start a valid
 * UTF-8 sequence replaced by U+FFFD, as exporters whose formats require
 * UTF-8 spell names.
 */
void sp_utf8_sanitize(struct sp_buf *b, const char *s, size_t n);

#endif
