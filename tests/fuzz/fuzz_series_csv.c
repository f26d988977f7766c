/* Fuzz target for the collectd csv series reader (detector/series_csv.c),
 * which memdiagctl replay points at files an operator copied from
 * anywhere. The input is written to an anonymous memory file and read
 * through its /proc/self/fd path, as a real file would be. Every sample
 * read is fed to a detector with a MemoryLimit set, so values the reader
 * lets through (huge, zero, time going backwards) reach the detector's
 * arithmetic too. Either the reader ends or reports an error naming the
 * line; never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "detector/detector.h"
#include "detector/series_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static mdp_detector_config cfg;
  static int configured;
  char path[64];
  mdp_series_csv csv;
  mdp_detector det;
  int fd, rc;

  if(!configured) {
    mdp_detector_config_init(&cfg);
    if(mdp_detector_config_set(&cfg, "MemoryLimit", "64M", NULL, 0) != 0)
      abort();
    configured = 1;
  }
  fd = memfd_create("fuzz-series", MFD_CLOEXEC);
  if(fd < 0)
    abort();
  if(size && write(fd, data, size) != (ssize_t)size)
    abort();
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

  rc = mdp_series_csv_open(&csv, path);
  if(rc == 0) {
    mdp_sample s;
    char text[256];
    mdp_detector_init(&det, &cfg);
    while((rc = mdp_series_csv_next(&csv, &s)) == 1) {
      mdp_decision d;
      mdp_detector_feed(&det, &s, &d);
    }
    mdp_detector_describe(&det, text, sizeof text);
  }
  mdp_series_csv_close(&csv);
  close(fd);
  return 0;
}
