/* memdiagctl: operator CLI. `replay` runs offline; every other verb talks
 * to the plugin over mutual TLS. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

int main(int argc, char **argv)
{
  for(int i = 1; i < argc; i++) {
    if(strcmp(argv[i], "replay") == 0)
      return mdctl_replay(argc - i, argv + i);
    if(argv[i][0] != '-')
      break;
  }
  return mdctl_remote(argc - 1, argv + 1);
}
