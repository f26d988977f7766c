/* Streaming line reader for heap dumps (prefix mdp_analysis_reader_):
 * plain files or zstd frames (recognised by their magic number, whatever
 * the name), read through one fixed buffer.
 *
 * A line that fits the buffer (1 MiB) comes whole. A longer one (a huge
 * array's references, a huge string) comes as its first and last 64 KiB:
 * the fields the analysis needs sit at either end of a dump line. A line
 * over 1 GiB, or a sparse file, is refused (-EINVAL): neither is a dump,
 * and reading it would hold the analysis for hours.
 *
 * Ownership: the reader is caller-owned; open() allocates its buffers and
 * the zstd stream, close() frees them (safe after a failed open). A line's
 * pointers stay valid until the next call to next().
 */
#ifndef MDP_ANALYSIS_READER_H
#define MDP_ANALYSIS_READER_H

#include <stddef.h>
#include <stdint.h>

#define MDP_ANALYSIS_READER_BUF  (1u << 20)
#define MDP_ANALYSIS_READER_EDGE (64u << 10)

typedef struct {
  const char *head; /* the line without its newline, or its first EDGE bytes */
  size_t head_len;
  const char *tail; /* long lines only: the last EDGE bytes, else NULL */
  size_t tail_len;
  uint64_t length; /* the whole line's length */
} mdp_analysis_line;

/* Called with each stretch of a long line's middle (the bytes between its
 * first and last EDGE bytes, in order; head is the first EDGE bytes), before
 * next() returns that line; line is its number. */
typedef void (*mdp_analysis_middle_fn)(void *arg, uint64_t line, const char *head, const char *p,
                                       size_t n);

typedef struct {
  int fd;
  mdp_analysis_middle_fn middle; /* optional; set after open() */
  void *middle_arg;
  const char *path;
  void *zs; /* ZSTD_DStream *, NULL for plain files */
  char *zin;
  size_t zin_len, zin_pos;
  int zframe_done; /* the last frame decoded ended cleanly */
  char *buf;
  size_t start, end; /* unread bytes in buf */
  char *edge;        /* head then tail of a long line */
  int eof;
  uint64_t line;       /* number of the last line returned */
  uint64_t file_bytes; /* bytes read from the file */
  uint64_t json_bytes; /* bytes of JSON (decompressed) */
  int compressed;
  char err[320];
} mdp_analysis_reader;

/* Returns 0 or a negative errno with r->err set. */
int mdp_analysis_reader_open(mdp_analysis_reader *r, const char *path);

/* 1 with *l set, 0 at the end, or a negative errno with r->err naming the
 * file and line (-EINVAL: the dump ends inside a line or a compressed frame
 * is cut short or corrupt; -EIO). */
int mdp_analysis_reader_next(mdp_analysis_reader *r, mdp_analysis_line *l);

void mdp_analysis_reader_close(mdp_analysis_reader *r);

/* Bytes the reader holds (for the analysis' memory count); a zstd
 * stream's window is counted once its first frame has begun. */
size_t mdp_analysis_reader_footprint(const mdp_analysis_reader *r);

#endif
