/* mdh-core-worker: a worker written against libmemdiag-hook alone (no
 * Ruby), for the runtime-neutral side of the hook: it answers ping from a
 * runtime thread of its own and forks many times while its I/O thread is
 * busy, checking in every child that the inherited hook is dropped.
 *
 *   mdh-core-worker SOCKET CERT KEY CA FORKS [hold]
 *
 * Prints "connected id=N", one "child K connected id=N" for the first two
 * children (which start hooks of their own), then "forks=N failures=F".
 * With "hold", the first request is taken from the queue and then held
 * until a line arrives on stdin: a test sees the worker busy with it, can
 * fill the queue behind it, or close the connection under it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memdiag/hook.h"

static const char *caps[] = {"ping"};

static mdh_config config(char **argv, const char *name)
{
  mdh_config c = {
      .socket_path = argv[1],
      .certificate = argv[2],
      .key = argv[3],
      .ca = argv[4],
      .name = name,
      .runtime = "c",
      .runtime_version = "c11",
      .capabilities = caps,
      .n_capabilities = 1,
  };
  return c;
}

static uint64_t wait_connected(mdh_hook *h)
{
  uint64_t id;
  while(!(id = mdh_connection_id(h)))
    usleep(10000);
  return id;
}

static int hold;

static void *serve(void *arg)
{
  mdh_hook *h = arg;
  char line[64];
  for(;;) {
    mdh_request req;
    mdh_reply_t r = {0};
    int rc = mdh_next_request(h, &req, 1000);
    if(rc == MDH_ETIMEDOUT || rc == MDH_EINTR)
      continue;
    if(rc)
      return NULL;
    if(req.op == MDH_OP_CONNECTION_CLOSED) {
      /* this worker starts nothing that outlives a request; never replied */
      mdh_request_clear(&req);
      continue;
    }
    if(hold) {
      hold = 0;
      if(!fgets(line, sizeof line, stdin))
        return NULL;
    }
    r.connection_id = req.connection_id;
    r.request_id = req.id;
    if(req.op == MDH_OP_PING) {
      r.status = MDH_STATUS_OK;
      r.data = req.payload ? req.payload : (const uint8_t *)"";
      r.data_len = req.payload_len;
    } else {
      r.status = MDH_STATUS_UNSUPPORTED;
      r.error = "this worker only answers ping";
    }
    mdh_reply(h, &r);
    mdh_request_clear(&req);
  }
}

/* In a child: the parent's hook must be unusable and harmless. */
static int check_inherited(mdh_hook *h)
{
  mdh_request req;
  mdh_reply_t r = {.connection_id = 1, .request_id = 1};
  int bad = 0;
  bad |= !mdh_forked_away(h);
  bad |= mdh_connection_id(h) != 0;
  bad |= mdh_next_request(h, &req, 0) != MDH_EFORKED;
  bad |= mdh_reply(h, &r) != MDH_EFORKED;
  mdh_wakeup(h);
  mdh_stop(h); /* releases plain memory only */
  return bad;
}

int main(int argc, char **argv)
{
  mdh_config c;
  mdh_hook *h = NULL;
  pthread_t runtime;
  int forks, i, failures = 0;

  if(argc < 6 || argc > 7) {
    fprintf(stderr, "usage: mdh-core-worker SOCKET CERT KEY CA FORKS [hold]\n");
    return 2;
  }
  hold = argc == 7 && !strcmp(argv[6], "hold");
  setvbuf(stdout, NULL, _IOLBF, 0);
  forks = atoi(argv[5]);
  c = config(argv, "core");
  if(mdh_start(&h, &c)) {
    fprintf(stderr, "mdh_start failed\n");
    return 1;
  }
  printf("connected id=%llu\n", (unsigned long long)wait_connected(h));
  pthread_create(&runtime, NULL, serve, h);

  for(i = 0; i < forks; i++) {
    pid_t pid = fork();
    int status;
    if(pid == 0) {
      int bad = check_inherited(h);
      if(i < 2 && !bad) {
        char name[32];
        mdh_hook *mine = NULL;
        snprintf(name, sizeof name, "core/child-%d", i);
        c = config(argv, name);
        if(mdh_start(&mine, &c))
          _exit(3);
        printf("child %d connected id=%llu\n", i, (unsigned long long)wait_connected(mine));
        mdh_stop(mine);
      }
      _exit(bad);
    }
    if(pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
      failures++;
  }
  printf("forks=%d failures=%d\n", forks, failures);
  pthread_join(runtime, NULL);
  return 0;
}
