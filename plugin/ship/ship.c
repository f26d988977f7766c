/* CaptureCommand: the runner thread and the child (see ship.h). */
#include "ship.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "md/text.h"

/* ---------------------------------------------------------------- state */

typedef struct job {
  struct job *next;
  char *folder, *worker, *instance, *reason; /* owned, sanitised */
  pid_t pid;
  uid_t uid; /* the worker's */
  gid_t gid;
  bool complete;
} job;

static struct {
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t wake;
  bool enabled; /* started (with or without a program) */
  bool running; /* the runner thread exists */
  bool stopping;
  pthread_t thread;
  mdp_ship_config_t cfg;
  mdp_ship_hooks_t hooks;
  mdp_ship_identity_t id;
  job *head, *tail;
  size_t queued;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void job_free(job *j)
{
  if(!j)
    return;
  free(j->folder);
  free(j->worker);
  free(j->instance);
  free(j->reason);
  free(j);
}

static char *clean_dup(const char *s)
{
  char *d = strdup(s ? s : "");
  return md_printable_inplace(d, MD_TEXT_PLAIN);
}

static void say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int level, const char *fmt, ...)
{
  char line[MDP_SHIP_LINE_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if(st.hooks.log)
    st.hooks.log(level, line, st.hooks.ctx);
}

typedef enum { SHIP_OK, SHIP_FAILED } ship_end;

static void vfinish(const job *j, ship_end end, double seconds, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void vfinish(const job *j, ship_end end, double seconds, const char *fmt, va_list ap)
{
  bool ok = end == SHIP_OK;
  mdp_ship_result_t res = {.folder = j->folder,
                           .worker = j->worker,
                           .instance = j->instance,
                           .pid = j->pid,
                           .ok = ok,
                           .seconds = seconds};
  vsnprintf(res.summary, sizeof(res.summary), fmt, ap);
  pthread_mutex_lock(&st.lock);
  res.shutdown = !ok && st.stopping;
  pthread_mutex_unlock(&st.lock);
  if(st.hooks.finished)
    st.hooks.finished(&res, st.hooks.ctx);
}

/* The command ran to its end: ok says whether it succeeded. */
static void finish(const job *j, bool ok, double seconds, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void finish(const job *j, bool ok, double seconds, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vfinish(j, ok ? SHIP_OK : SHIP_FAILED, seconds, fmt, ap);
  va_end(ap);
}

/* The command failed, or never ran. */
static void failed(const job *j, double seconds, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void failed(const job *j, double seconds, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vfinish(j, SHIP_FAILED, seconds, fmt, ap);
  va_end(ap);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- child */

/* What the child reports through its close-on-exec pipe when it cannot
 * exec: the step and errno. Nothing arrives when exec succeeds. */
typedef struct child_error {
  int step;
  int err;
} child_error;

enum { STEP_FDS, STEP_GROUPS, STEP_GID, STEP_UID, STEP_REGAIN, STEP_CHDIR, STEP_EXEC };
static const char *const step_names[] = {"set up its descriptors", "setgroups", "setgid", "setuid",
                                         "drop root for good",     "chdir /",   "exec"};

/* After fork: async-signal-safe calls only, then exec or _exit. */
static void child_exec(int out, int errfd, char *const argv[], char *const envp[],
                       const mdp_ship_identity_t *id)
{
  child_error ce = {STEP_FDS, 0};
  sigset_t none;
  struct sigaction dfl;
  int null = -1;

  /* collectd's dispositions and masks survive exec otherwise (SIGPIPE
   * ignored, signals blocked in this thread). */
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for(int s = 1; s < NSIG; s++)
    if(s != SIGKILL && s != SIGSTOP)
      sigaction(s, &dfl, NULL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setpgid(0, 0); /* its own group: the timeout kills all it started */

  null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if(null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
    goto fail;
  /* The error pipe moves to 3 (close-on-exec again: dup2 clears it) and
   * nothing else of collectd's (sockets, keys) reaches the program. */
  if(errfd != 3) {
    if(dup2(errfd, 3) < 0)
      goto fail;
    errfd = 3;
  }
  if(fcntl(3, F_SETFD, FD_CLOEXEC) != 0)
    goto fail;
  if(close_range(4, ~0U, 0) != 0)
    for(int fd = 4; fd < 65536; fd++)
      close(fd);
  if(id->drop) {
    ce.step = STEP_GROUPS;
    if(setgroups((size_t)id->n_groups, id->groups) != 0)
      goto fail;
    ce.step = STEP_GID;
    if(setgid(id->gid) != 0)
      goto fail;
    ce.step = STEP_UID;
    if(setuid(id->uid) != 0)
      goto fail;
    ce.step = STEP_REGAIN;
    if(id->uid != 0 && setuid(0) == 0) {
      errno = EPERM;
      goto fail;
    }
  }
  ce.step = STEP_CHDIR;
  if(chdir("/") != 0)
    goto fail;
  ce.step = STEP_EXEC;
  execve(argv[0], argv, envp);
fail:
  ce.err = errno;
  if(errfd >= 0) {
    ssize_t w = write(errfd, &ce, sizeof(ce));
    (void)w;
  }
  _exit(127);
}

/* ---------------------------------------------------------------- parent */

/* A pipe whose ends are above 2, so that the child's dup2 onto 0, 1 and 2
 * cannot overwrite one of them (a daemon may run with 0-2 closed). */
static int pipe_high(int fds[2])
{
  if(pipe2(fds, O_CLOEXEC) != 0)
    return -errno;
  for(int i = 0; i < 2; i++) {
    if(fds[i] > 2)
      continue;
    int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    if(hi < 0) {
      int e = errno;
      close(fds[0]);
      close(fds[1]);
      return -e;
    }
    close(fds[i]);
    fds[i] = hi;
  }
  return 0;
}

typedef struct output {
  const job *j;
  char line[MDP_SHIP_LINE_MAX + 1];
  size_t len;
  size_t logged, dropped;
} output;

static void emit_line(output *o)
{
  char clean[MDP_SHIP_LINE_MAX + 1];

  if(o->len && o->line[o->len - 1] == '\r')
    o->len--;
  o->line[o->len] = '\0';
  o->len = 0;
  if(o->logged >= MDP_SHIP_LOG_LINES) {
    o->dropped++;
    return;
  }
  o->logged++;
  md_printable(clean, sizeof(clean), o->line, MD_TEXT_PLAIN);
  say(MDP_SHIP_LOG_INFO, "CaptureCommand for worker %s (pid %d): %s", o->j->worker, (int)o->j->pid,
      clean);
}

static void feed(output *o, const char *buf, size_t n)
{
  for(size_t i = 0; i < n; i++) {
    if(buf[i] == '\n') {
      emit_line(o);
      continue;
    }
    o->line[o->len++] = buf[i];
    if(o->len == MDP_SHIP_LINE_MAX)
      emit_line(o);
  }
}

/* Read what is there; returns false at end of file. */
static bool pump(int fd, output *o)
{
  char buf[4096];
  for(;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if(n > 0) {
      feed(o, buf, (size_t)n);
      continue;
    }
    if(n < 0 && errno == EINTR)
      continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

static bool stopping(void)
{
  pthread_mutex_lock(&st.lock);
  bool s = st.stopping;
  pthread_mutex_unlock(&st.lock);
  return s;
}

static void set_env(char **envp, size_t *n, char *slot, size_t len, const char *name,
                    const char *value)
{
  snprintf(slot, len, "%s=%s", name, value);
  envp[(*n)++] = slot;
}

/* Everything the child needs, built before fork. */
typedef struct launch {
  char *argv[3];
  char *envp[12];
  char program[MDP_SHIP_PATH_MAX];
  char env[10][MDP_SHIP_PATH_MAX + 32];
} launch;

static void build_launch(launch *l, const job *j)
{
  size_t n = 0;
  char pid[32];

  snprintf(l->program, sizeof(l->program), "%s", st.cfg.program);
  l->argv[0] = l->program;
  l->argv[1] = j->folder;
  l->argv[2] = NULL;
  snprintf(pid, sizeof(pid), "%d", (int)j->pid);
  set_env(l->envp, &n, l->env[0], sizeof(l->env[0]), "PATH",
          "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  set_env(l->envp, &n, l->env[1], sizeof(l->env[1]), "HOME", st.id.home);
  set_env(l->envp, &n, l->env[2], sizeof(l->env[2]), "USER", st.id.name);
  set_env(l->envp, &n, l->env[3], sizeof(l->env[3]), "LOGNAME", st.id.name);
  set_env(l->envp, &n, l->env[4], sizeof(l->env[4]), "MEMDIAG_FOLDER", j->folder);
  set_env(l->envp, &n, l->env[5], sizeof(l->env[5]), "MEMDIAG_WORKER", j->worker);
  set_env(l->envp, &n, l->env[6], sizeof(l->env[6]), "MEMDIAG_PID", pid);
  set_env(l->envp, &n, l->env[7], sizeof(l->env[7]), "MEMDIAG_REASON", j->reason);
  set_env(l->envp, &n, l->env[8], sizeof(l->env[8]), "MEMDIAG_STATUS",
          j->complete ? "complete" : "incomplete");
  l->envp[n] = NULL;
}

/* A file of the worker's own: regular, its uid's, one link (a hard link
 * to someone else's file has two, and protected_hardlinks stops the rest). */
static bool workers_file(const struct stat *sb, const job *j)
{
  return S_ISREG(sb->st_mode) && sb->st_uid == j->uid && sb->st_nlink == 1;
}

/* The files the worker wrote itself (DumpTransfer file) are its own, 0600
 * or as its umask says, and the command's user could not read them: they
 * get the user's group and 0640. The plugin's files already have them (the
 * store shares them as it creates them); anything else is left as it is,
 * so a file of root's that the worker renamed into its folder stays
 * root's, 0600. Checked first without opening (a device or FIFO is never
 * opened), then again on the descriptor, opened without following links. */
static void share_workers_files(const job *j)
{
  struct stat sb, fsb;
  struct dirent *e;
  int dfd = open(j->folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d;

  if(dfd < 0 || !(d = fdopendir(dfd))) {
    if(dfd >= 0)
      close(dfd);
    return; /* the command will say what it cannot read */
  }
  while((e = readdir(d))) {
    if(fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !workers_file(&sb, j))
      continue;
    int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if(fd < 0)
      continue;
    if(fstat(fd, &fsb) == 0 && fsb.st_ino == sb.st_ino && fsb.st_dev == sb.st_dev &&
       workers_file(&fsb, j) && (fchown(fd, (uid_t)-1, st.id.gid) != 0 || fchmod(fd, 0640) != 0))
      say(MDP_SHIP_LOG_WARNING, "CaptureCommand: cannot share %s/%s with %s: %s", j->folder,
          e->d_name, st.id.name, strerror(errno));
    close(fd);
  }
  closedir(d);
}

/* CaptureCommandUser is the worker's user (or its group): that worker can
 * SIGSTOP, ptrace or alter each upload and read every capture shipped. */
static void warn_shared_user(const job *j)
{
  if(j->uid == st.id.uid)
    say(MDP_SHIP_LOG_WARNING,
        "CaptureCommandUser %s is the user of worker %s (pid %d): the worker can stop, trace or "
        "alter every upload; run CaptureCommand as a user of its own (docs/security.md)",
        st.id.name, j->worker, (int)j->pid);
  else if(j->gid == st.id.gid)
    say(MDP_SHIP_LOG_WARNING,
        "CaptureCommandUser %s has the group of worker %s (pid %d), gid %d: that group reads "
        "every capture; give CaptureCommand's user a group of its own (docs/security.md)",
        st.id.name, j->worker, (int)j->pid, (int)j->gid);
}

int mdp_ship_reader_gid(gid_t *gid)
{
  pthread_mutex_lock(&st.lock);
  bool shared = st.running && st.id.drop && st.id.uid != 0;
  if(shared)
    *gid = st.id.gid;
  pthread_mutex_unlock(&st.lock);
  return shared ? 0 : -ENOENT;
}

static void run_job(const job *j)
{
  launch *l = calloc(1, sizeof(*l));
  output *o = calloc(1, sizeof(*o));
  int out[2] = {-1, -1}, errp[2] = {-1, -1};
  child_error ce;
  pid_t pid;
  int rc;

  if(!l || !o) {
    failed(j, 0, "not run: out of memory");
    goto done;
  }
  o->j = j;
  build_launch(l, j);
  if(st.id.drop && st.id.uid != 0) {
    warn_shared_user(j);
    share_workers_files(j);
  }
  if((rc = pipe_high(out)) != 0 || (rc = pipe_high(errp)) != 0) {
    failed(j, 0, "not run: pipe: %s", strerror(-rc));
    goto done;
  }
  double t0 = now_s();
  pid = fork();
  if(pid == 0)
    child_exec(out[1], errp[1], l->argv, l->envp, &st.id);
  if(pid < 0) {
    failed(j, 0, "not run: fork: %s", strerror(errno));
    goto done;
  }
  close(out[1]);
  close(errp[1]);
  out[1] = errp[1] = -1;
  /* EOF when exec succeeded (the pipe is close-on-exec), a report if not. */
  ssize_t got;
  do
    got = read(errp[0], &ce, sizeof(ce));
  while(got < 0 && errno == EINTR);
  if(got == (ssize_t)sizeof(ce)) {
    while(waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    failed(j, 0, "could not run %s as %s: %s: %s", st.cfg.program, st.id.name, step_names[ce.step],
           strerror(ce.err));
    goto done;
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);

  /* Supervise: output, the timeout, the plugin's shutdown. The exit is
   * seen without reaping (WNOWAIT), so the group's ID cannot be reused
   * before what is left of the group is killed. */
  const char *why = NULL;
  int kills = 0;
  double deadline = t0 + st.cfg.timeout_ms / 1000.0, next_kill = 0;
  bool open_out = true;
  for(;;) {
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
      break;
    double now = now_s();
    if(!why && stopping())
      why = "stopped at the plugin's shutdown", next_kill = now;
    if(!why && now >= deadline)
      why = "timed out", next_kill = now;
    if(why && now >= next_kill && kills < 2) {
      kill(-pid, kills == 0 ? SIGTERM : SIGKILL);
      kills++;
      next_kill = now + MDP_SHIP_KILL_GRACE_MS / 1000.0;
    }
    if(open_out) {
      struct pollfd p = {.fd = out[0], .events = POLLIN};
      if(poll(&p, 1, 100) > 0)
        open_out = pump(out[0], o);
    } else {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  double secs = now_s() - t0;
  kill(-pid, SIGKILL); /* whatever it left running in its group */
  int status = 0;
  while(waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if(open_out)
    pump(out[0], o);
  if(o->len)
    emit_line(o);
  if(o->dropped)
    say(MDP_SHIP_LOG_INFO,
        "CaptureCommand for worker %s (pid %d): %zu more output lines not logged", j->worker,
        (int)j->pid, o->dropped);

  if(why && !strcmp(why, "timed out"))
    failed(j, secs, "timed out after %.0f s (CaptureCommandTimeout) and was killed",
           st.cfg.timeout_ms / 1000.0);
  else if(why)
    failed(j, secs, "%s", why);
  else if(WIFEXITED(status))
    finish(j, WEXITSTATUS(status) == 0, secs, "exited with status %d", WEXITSTATUS(status));
  else if(WIFSIGNALED(status))
    failed(j, secs, "killed by SIG%s",
           sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
  else
    failed(j, secs, "ended with wait status %d", status);
done:
  for(int i = 0; i < 2; i++) {
    if(out[i] >= 0)
      close(out[i]);
    if(errp[i] >= 0)
      close(errp[i]);
  }
  free(l);
  free(o);
}

/* ---------------------------------------------------------------- runner */

static job *pop_locked(void)
{
  job *j = st.head;
  if(j) {
    st.head = j->next;
    if(!st.head)
      st.tail = NULL;
    st.queued--;
  }
  return j;
}

static void *runner(void *arg)
{
  job *j;
  (void)arg;
  pthread_mutex_lock(&st.lock);
  for(;;) {
    while(!st.head && !st.stopping)
      pthread_cond_wait(&st.wake, &st.lock);
    if(st.stopping)
      break;
    j = pop_locked();
    pthread_mutex_unlock(&st.lock);
    run_job(j);
    job_free(j);
    pthread_mutex_lock(&st.lock);
  }
  while((j = pop_locked())) {
    pthread_mutex_unlock(&st.lock);
    failed(j, 0, "not run: the plugin is shutting down");
    job_free(j);
    pthread_mutex_lock(&st.lock);
  }
  pthread_mutex_unlock(&st.lock);
  return NULL;
}

static void sigchld_noop(int sig) { (void)sig; }

int mdp_ship_start(const mdp_ship_config_t *cfg, const mdp_ship_hooks_t *hooks, char *err,
                   size_t errlen)
{
  mdp_ship_identity_t id;
  sigset_t all, old;
  struct sigaction sa;
  int rc;

  pthread_mutex_lock(&st.lock);
  if(st.running || st.enabled) {
    pthread_mutex_unlock(&st.lock);
    md_seterr(err, errlen, "CaptureCommand: already started");
    return -EALREADY;
  }
  st.enabled = true;
  st.cfg = *cfg;
  st.hooks = *hooks;
  if(!cfg->program[0]) {
    pthread_mutex_unlock(&st.lock);
    return 0;
  }
  if((rc = mdp_ship_identity(cfg->user, &id, err, errlen)) != 0) {
    st.enabled = false;
    pthread_mutex_unlock(&st.lock);
    return rc;
  }
  st.id = id;
  /* collectd sets SIGCHLD to SIG_IGN, under which children are reaped by
   * the kernel and their exit status is lost; a handler that does nothing
   * (as collectd's exec plugin installs) brings waitpid back. */
  if(sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = sigchld_noop;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
  }
  /* Process-directed signals stay with collectd's own threads. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  st.stopping = false;
  rc = pthread_create(&st.thread, NULL, runner, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if(rc != 0) {
    st.enabled = false;
    pthread_mutex_unlock(&st.lock);
    md_seterr(err, errlen, "CaptureCommand: cannot start its thread: %s", strerror(rc));
    return -rc;
  }
  st.running = true;
  pthread_mutex_unlock(&st.lock);
  return 0;
}

int mdp_ship_submit(const mdp_ship_job_t *in)
{
  job *j;

  pthread_mutex_lock(&st.lock);
  if(st.enabled && !st.running) { /* no CaptureCommand configured */
    pthread_mutex_unlock(&st.lock);
    return 0;
  }
  if(!st.running || st.stopping) {
    pthread_mutex_unlock(&st.lock);
    return -ESHUTDOWN;
  }
  if(st.queued >= MDP_SHIP_QUEUE_MAX) {
    pthread_mutex_unlock(&st.lock);
    return -ENOSPC;
  }
  j = calloc(1, sizeof(*j));
  if(j) {
    j->folder = clean_dup(in->folder);
    j->worker = clean_dup(in->worker);
    j->instance = clean_dup(in->instance);
    j->reason = clean_dup(in->reason);
    j->pid = in->pid;
    j->uid = in->uid;
    j->gid = in->gid;
    j->complete = in->complete;
  }
  if(!j || !j->folder || !j->worker || !j->instance || !j->reason) {
    pthread_mutex_unlock(&st.lock);
    job_free(j);
    return -ENOMEM;
  }
  if(st.tail)
    st.tail->next = j;
  else
    st.head = j;
  st.tail = j;
  st.queued++;
  pthread_cond_signal(&st.wake);
  pthread_mutex_unlock(&st.lock);
  return 0;
}

void mdp_ship_stop(void)
{
  pthread_mutex_lock(&st.lock);
  bool join = st.running;
  st.stopping = true;
  pthread_cond_broadcast(&st.wake);
  pthread_mutex_unlock(&st.lock);
  if(join)
    pthread_join(st.thread, NULL);
  pthread_mutex_lock(&st.lock);
  st.running = st.enabled = st.stopping = false;
  pthread_mutex_unlock(&st.lock);
}
