/* memdiag plugin: one sample of a memory series (prefix mdp_sample_).
 *
 * When, and how many bytes: a worker's figure as the read callback samples
 * it (RSS, or the figure Memory names first), a memory cgroup's working
 * set, a line of a csv series (`memdiagctl replay`). The one type the
 * detector is fed (mdp_detector_feed), the csv reader reads
 * (mdp_series_csv_next), the registry keeps as a worker's recent history
 * and a capture plan writes into its manifest.
 *
 * A plain value: copied by assignment, nothing to free, no thread of its
 * own. Header only (a leaf every module may use).
 */
#ifndef MDP_SAMPLE_H
#define MDP_SAMPLE_H

#include <stdint.h>

typedef struct mdp_sample {
  double time;    /* seconds: unix time in the plugin, any epoch in a replayed series */
  uint64_t value; /* bytes */
} mdp_sample;

#endif
