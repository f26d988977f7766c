/* The analysis tests' recorded dumps (tests/data/dumps, MEMDIAG_DUMPS_DIR
 * from CMake), by file name. data() returns one of four rotating static
 * buffers: up to four paths may be in use at once (a 3-dump set). */
#ifndef MDT_DUMP_DATA_H
#define MDT_DUMP_DATA_H

#include <stdio.h>

static inline const char *data(const char *name)
{
  static char paths[4][512];
  static unsigned next;
  char *p = paths[next++ % 4];
  snprintf(p, 512, "%s/%s", MEMDIAG_DUMPS_DIR, name);
  return p;
}

#endif
