/* Streaming heap-dump line reader; see reader.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "md/text.h"

#include "reader.h"

#define BUF            MDP_ANALYSIS_READER_BUF
#define EDGE           MDP_ANALYSIS_READER_EDGE
/* No heap dump line comes near this (a 10^7-element array is ~150 MB);
 * a file without newlines must not hold the analysis for hours. */
#define LINE_MAX_BYTES (1ull << 30)

static int fail(mdp_analysis_reader *r, int rc, uint64_t line, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  md_vseterr_at(r->err, sizeof(r->err), r->path, line, fmt, ap);
  va_end(ap);
  return rc;
}

int mdp_analysis_reader_open(mdp_analysis_reader *r, const char *path)
{
  static const unsigned char zmagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  unsigned char magic[4];
  struct stat st;
  ssize_t got;

  memset(r, 0, sizeof(*r));
  r->fd = -1;
  r->path = path;
  /* The plugin reads a folder its worker can write: a symlink or a FIFO
   * planted there must not make root read elsewhere or block. */
  r->fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if(r->fd < 0)
    return fail(r, -errno, 0, "cannot open: %s", strerror(errno));
  if(fstat(r->fd, &st) != 0)
    return fail(r, -errno, 0, "cannot stat: %s", strerror(errno));
  if(!S_ISREG(st.st_mode))
    return fail(r, -EINVAL, 0, "not a regular file");
  /* A sparse file (far fewer blocks than bytes) is not a dump: reading its
   * holes would hold the analysis thread for hours. */
  if(st.st_size > (off_t)(4 * BUF) && (uint64_t)st.st_blocks * 512u < (uint64_t)st.st_size / 2)
    return fail(r, -EINVAL, 0, "a sparse file (%llu bytes long, %llu on disk) is not a heap dump",
                (unsigned long long)st.st_size, (unsigned long long)st.st_blocks * 512u);
  r->buf = malloc(BUF);
  r->edge = malloc(2 * EDGE);
  if(!r->buf || !r->edge)
    return fail(r, -ENOMEM, 0, "out of memory");
  got = pread(r->fd, magic, sizeof(magic), 0);
  if(got == (ssize_t)sizeof(magic) && memcmp(magic, zmagic, sizeof(magic)) == 0) {
    r->compressed = 1;
    r->zs = ZSTD_createDStream();
    r->zin = malloc(ZSTD_DStreamInSize());
    if(!r->zs || !r->zin)
      return fail(r, -ENOMEM, 0, "out of memory");
    ZSTD_initDStream(r->zs);
    r->zframe_done = 1;
  }
  return 0;
}

static int read_some(mdp_analysis_reader *r, char *dst, size_t len, size_t *got)
{
  *got = 0;
  for(;;) {
    ssize_t n = read(r->fd, dst, len);
    if(n >= 0) {
      *got = (size_t)n;
      r->file_bytes += (uint64_t)n;
      return 0;
    }
    if(errno != EINTR)
      return fail(r, -EIO, 0, "read error: %s", strerror(errno));
  }
}

/* Appends decoded bytes to buf[end..BUF). Returns the count, 0 at the end
 * of the file, or a negative errno. */
static int fill(mdp_analysis_reader *r)
{
  size_t room = BUF - r->end, got;
  int rc;

  if(!r->zs) {
    rc = read_some(r, r->buf + r->end, room, &got);
    if(rc)
      return rc;
    r->end += got;
    r->json_bytes += got;
    return (int)got;
  }
  for(;;) {
    if(r->zin_pos == r->zin_len) {
      rc = read_some(r, r->zin, ZSTD_DStreamInSize(), &got);
      if(rc)
        return rc;
      if(got == 0) {
        if(!r->zframe_done)
          return fail(r, -EINVAL, r->line + 1,
                      "the compressed data ends inside a frame (truncated file)");
        return 0;
      }
      r->zin_len = got;
      r->zin_pos = 0;
    }
    ZSTD_inBuffer in = {r->zin, r->zin_len, r->zin_pos};
    ZSTD_outBuffer out = {r->buf + r->end, room, 0};
    size_t ret = ZSTD_decompressStream(r->zs, &out, &in);
    r->zin_pos = in.pos;
    if(ZSTD_isError(ret))
      return fail(r, -EINVAL, r->line + 1, "corrupt zstd data: %s", ZSTD_getErrorName(ret));
    r->zframe_done = ret == 0;
    if(out.pos) {
      r->end += out.pos;
      r->json_bytes += out.pos;
      return (int)out.pos;
    }
  }
}

/* The buffer holds part of a line and no newline: keep its first and last
 * EDGE bytes and stream through the rest. */
static int long_line(mdp_analysis_reader *r, mdp_analysis_line *l)
{
  uint64_t before = 0; /* line bytes that preceded buf[0] */
  size_t from = EDGE;
  int rc;

  memcpy(r->edge, r->buf, EDGE);
  for(int round = 0;; round++) {
    if(r->middle && r->end > (round ? 1u : 2u) * EDGE)
      r->middle(r->middle_arg, r->line + 1, r->edge, r->buf + (round ? 0 : EDGE),
                r->end - (round ? 1u : 2u) * EDGE);
    before += r->end - EDGE;
    if(before > LINE_MAX_BYTES)
      return fail(r, -EINVAL, r->line + 1, "a line longer than %llu bytes is not a heap dump's",
                  (unsigned long long)LINE_MAX_BYTES);
    memmove(r->buf, r->buf + r->end - EDGE, EDGE);
    r->end = EDGE;
    from = EDGE;
    for(;;) {
      char *nl = memchr(r->buf + from, '\n', r->end - from);
      if(nl) {
        size_t p = (size_t)(nl - r->buf);
        if(r->middle && p > EDGE)
          r->middle(r->middle_arg, r->line + 1, r->edge, r->buf, p - EDGE);
        memcpy(r->edge + EDGE, r->buf + p - EDGE, EDGE);
        r->start = p + 1;
        r->line++;
        l->head = r->edge;
        l->head_len = EDGE;
        l->tail = r->edge + EDGE;
        l->tail_len = EDGE;
        l->length = before + p;
        return 1;
      }
      if(r->end == BUF)
        break;
      from = r->end;
      rc = fill(r);
      if(rc < 0)
        return rc;
      if(rc == 0)
        return fail(r, -EINVAL, r->line + 1,
                    "the dump ends in the middle of this line (truncated file)");
    }
  }
}

int mdp_analysis_reader_next(mdp_analysis_reader *r, mdp_analysis_line *l)
{
  size_t from = r->start;
  int rc;

  for(;;) {
    char *nl = memchr(r->buf + from, '\n', r->end - from);
    if(nl) {
      l->head = r->buf + r->start;
      l->head_len = (size_t)(nl - l->head);
      l->tail = NULL;
      l->tail_len = 0;
      l->length = l->head_len;
      r->start = (size_t)(nl - r->buf) + 1;
      r->line++;
      return 1;
    }
    if(r->eof) {
      if(r->start == r->end)
        return 0;
      return fail(r, -EINVAL, r->line + 1,
                  "the dump ends in the middle of this line (truncated file)");
    }
    if(r->start > 0) {
      memmove(r->buf, r->buf + r->start, r->end - r->start);
      r->end -= r->start;
      r->start = 0;
    }
    if(r->end == BUF)
      return long_line(r, l);
    from = r->end;
    rc = fill(r);
    if(rc < 0)
      return rc;
    if(rc == 0)
      r->eof = 1;
  }
}

void mdp_analysis_reader_close(mdp_analysis_reader *r)
{
  if(r->fd >= 0)
    close(r->fd);
  r->fd = -1;
  ZSTD_freeDStream(r->zs);
  free(r->zin);
  free(r->buf);
  free(r->edge);
  r->zs = NULL;
  r->zin = r->buf = r->edge = NULL;
}

size_t mdp_analysis_reader_footprint(const mdp_analysis_reader *r)
{
  return BUF + 2 * EDGE + (r->zs ? ZSTD_DStreamInSize() + ZSTD_sizeof_DStream(r->zs) : 0);
}
