/* memdiagctl verbs. Each returns the process exit status:
 * 0 success, 1 the operation failed or was refused, 2 usage error. */
#ifndef MDCTL_CTL_H
#define MDCTL_CTL_H

/* replay.c: run the detector over a recorded series; argv[0] is "replay". */
int mdctl_replay(int argc, char **argv);

/* analyze.c: the retained set of a capture's heap dumps; argv[0] is
 * "analyze". */
int mdctl_analyze(int argc, char **argv);

/* remote.c: every verb that talks to the plugin's socket; argv[0] is the
 * first argument after the program name (global options or the verb). */
int mdctl_remote(int argc, char **argv);

#endif
