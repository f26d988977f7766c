/* Runs a command with its output sent to a file and prints what it cost:
 * wall seconds, user and system CPU seconds and peak RSS (wait4's rusage),
 * so that benchmark scripts can compare programs without GNU time.
 *   bench_rusage OUTFILE CMD [ARG...]
 * Prints: wall_s=W user_s=U sys_s=S maxrss_kb=K status=N */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  struct timespec t0, t1;
  struct rusage ru;
  int status;
  pid_t pid;

  if(argc < 3) {
    fprintf(stderr, "usage: bench_rusage OUTFILE CMD [ARG...]\n");
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid = fork();
  if(pid < 0) {
    perror("bench_rusage: fork");
    return 1;
  }
  if(pid == 0) {
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if(fd < 0 || dup2(fd, 1) < 0) {
      perror(argv[1]);
      _exit(127);
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    _exit(127);
  }
  if(wait4(pid, &status, 0, &ru) < 0) {
    perror("bench_rusage: wait4");
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("wall_s=%.3f user_s=%.3f sys_s=%.3f maxrss_kb=%ld status=%d\n",
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
         (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return 0;
}
