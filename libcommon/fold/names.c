/* How the outputs spell names (see fold_internal.h). */
#include <stdio.h>

#include "fold/fold_internal.h"
#include "util/utf8.h"

void fold_shown_name(char *buf, size_t len, const char *name, size_t n, const char *suffix)
{
	if (n > len - 8)
		n = len - 8;
	for (size_t i = 0; i < n; i++)
		buf[i] = name[i] == ';' ? ':' : name[i];
	snprintf(buf + n, len - n, "%s", suffix);
}

void fold_valid_utf8(struct sp_buf *b, const char *s, size_t n)
{
	sp_buf_reset(b);
	for (size_t i = 0; i < n;) {
		size_t k = sp_utf8_len((const unsigned char *)s + i, n - i);
		if (k) {
			sp_buf_add(b, s + i, k);
			i += k;
		} else {
			sp_buf_adds(b, "\xef\xbf\xbd");
			i++;
		}
	}
}
