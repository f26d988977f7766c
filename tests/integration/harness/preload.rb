# The sanitizer runtime for the processes of a test that load our
# instrumented code without being linked with it: collectd (memdiag.so) and
# hooked Ruby workers (the hook's extension). make check-tsan
# (tests/sanitize/check) names the runtime in MEMDIAG_TEST_PRELOAD; the
# spawns of collectd and of hooked workers add it as LD_PRELOAD, and no
# other process gets it: libtsan preloaded into sh or bash (a test's own
# shell steps, conf/memdiag-certs) makes them die with SIGSEGV at start.
# Outside tests/sanitize/check it is unset and nothing changes.
module TestPreload
  RUNTIME = ENV.fetch("MEMDIAG_TEST_PRELOAD", "")

  # Environment entries for a spawn of collectd or of a hooked Ruby worker.
  def self.env = RUNTIME.empty? ? {} : { "LD_PRELOAD" => RUNTIME }

  # Under TSan (make check-tsan). Its runtime does not follow a process
  # forked from a threaded one: such a child runs no signal handler, and a
  # fork in it may wait for good on the runtime's own locks ("starting new
  # threads after multi-threaded fork is not supported"). A Puma worker is
  # such a child: tests that need a signal or a fork inside one say so.
  def self.tsan? = RUNTIME.include?("libtsan")

  # The same as words for a shell command that execs the worker (the shell
  # itself must not get it): ["env", "LD_PRELOAD=..."] or [].
  def self.env_words = RUNTIME.empty? ? [] : ["env", "LD_PRELOAD=#{RUNTIME}"]
end
