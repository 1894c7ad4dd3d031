/*
 * buf.c - the one byte-buffer type (invariant in proxy.h, pgbouncer iobuf
 * style).  Compacts before growing so a steady stream of frames reuses the
 * same memory.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

bool
px_buf_sane(const struct px_buf *b)
{
	return b->head <= b->tail && b->tail <= b->cap &&
	    (b->cap == 0 || b->data != NULL);
}

int
px_buf_reserve(struct px_buf *b, size_t n)
{
	size_t len = b->tail - b->head;
	size_t ncap;
	uint8_t *nd;

	if (b->cap - b->tail >= n)
		return 0;
	if (b->head > 0 && b->cap - len >= n) {
		memmove(b->data, b->data + b->head, len);
		b->head = 0;
		b->tail = len;
		return 0;
	}
	ncap = b->cap ? b->cap : 16384;
	while (ncap - len < n) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if ((nd = malloc(ncap)) == NULL)
		return -1;
	if (len)
		memcpy(nd, b->data + b->head, len);
	free(b->data);
	b->data = nd;
	b->cap = ncap;
	b->head = 0;
	b->tail = len;
	return 0;
}

int
px_buf_append(struct px_buf *b, const void *p, size_t n)
{
	if (px_buf_reserve(b, n) == -1)
		return -1;
	memcpy(b->data + b->tail, p, n);
	b->tail += n;
	return 0;
}

void
px_buf_consume(struct px_buf *b, size_t n)
{
	b->head += n;
	if (b->head == b->tail)
		b->head = b->tail = 0;
}

void
px_buf_shrink(struct px_buf *b, size_t keep)
{
	if (b->head == b->tail && b->cap > keep) {
		free(b->data); b->data = NULL;
		b->cap = b->head = b->tail = 0;
	}
}

void
px_buf_free(struct px_buf *b)
{
	free(b->data); b->data = NULL;
	b->cap = b->head = b->tail = 0;
}
