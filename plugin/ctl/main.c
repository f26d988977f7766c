/* memdiagctl: operator CLI. `replay` and `analyze` run offline; every other verb talks
 * to the plugin over mutual TLS. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

/* Global options that take a value as the next argument: that value is
 * never the verb, even when it reads "replay" or "analyze". */
static int takes_value(const char *opt)
{
  static const char *const with_value[] = {"--socket", "--cert", "--key", "--ca", "--timeout"};
  for(size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
    if(strcmp(opt, with_value[i]) == 0)
      return 1;
  return 0;
}

int main(int argc, char **argv)
{
  for(int i = 1; i < argc; i++) {
    if(argv[i][0] != '-') {
      if(strcmp(argv[i], "replay") == 0)
        return mdctl_replay(argc - i, argv + i);
      if(strcmp(argv[i], "analyze") == 0) {
        /* Options before the verb (--json) are its own: move it first. */
        char *verb = argv[i];
        memmove(argv + 2, argv + 1, (size_t)(i - 1) * sizeof(*argv));
        argv[1] = verb;
        return mdctl_analyze(argc - 1, argv + 1);
      }
      break;
    }
    if(takes_value(argv[i]))
      i++;
  }
  return mdctl_remote(argc - 1, argv + 1);
}
