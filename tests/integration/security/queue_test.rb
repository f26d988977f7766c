# Issue 24, finding 7: one process held the capture queue. It registered 8
# names, each past CaptureSize, and answered none of the plugin's requests:
# their plans ran one after the other, each until DumpTimeout, and an honest
# worker queued behind them waited 8 x DumpTimeout (first come, first
# served). Here each plan is a dump and its heap profile, StepTimeout each. Now a process has at most one plan, queued or running, whatever
# names it registered (the others are skipped, naming the rule), and the
# queue takes turns per uid: a worker of another uid starts after at most
# one plan of the attacker's uid. The limit of 4 registered connections per
# process (finding 5) is why the 8 names come from two processes here.
require_relative "helper"

class SecurityQueueTest < Capture::Test
  NAMES = 4 # per process: the most one process may register
  STEP_TIMEOUT = 8 # s, for the dump and the heap profile after it: a plan of the attacker's takes 16 s

  def setup
    @bench = Capture::Bench.new("sec-queue", Security.keys + <<~KEYS)
      CaptureSize "32M"
      Plan "dump"
      CaptureConcurrency 1
      StepTimeout "#{STEP_TIMEOUT}s"
    KEYS
  end

  # A capture of worker name: started, queued or skipped, as the log says.
  def triggered?(name, pid)
    who = "worker #{name} (pid #{pid})"
    @bench.site.log_has?("capturing worker #{name} (pid #{pid},") || @bench.site.log_has?("capture of #{who} queued") ||
      @bench.site.log_has?("capture of #{who} skipped")
  end

  def test_one_process_cannot_hold_the_queue
    site = @bench.site
    attackers = %w[hog-a hog-b].map do |name|
      Security.attacker(@bench, "names", "--count", NAMES.to_s, "--allocate-mb", "64", name: name)
    end
    attackers.each do |a|
      site.wait_until("#{a.name} registered its names") { a.output.include?("registered #{NAMES} refused 0") }
    end
    names = attackers.flat_map { |a| (1..NAMES).map { |i| ["#{a.name}-#{i}", a.pid] } }
    site.wait_until("each of the attacker's #{names.size} names is triggered") do
      names.all? { |n, pid| triggered?(n, pid) }
    end
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    honest = site.test_worker("honest", "--allocate-mb", 64)
    site.wait_welcomed(honest)
    mine = "capture of worker honest (pid #{honest.pid}): capture started"
    # on the old queue it waits for every one of the attacker's 8 plans
    site.wait_until("the honest worker's capture starts", timeout: 8 * 2 * STEP_TIMEOUT + E2E::WAIT) do
      site.log_has?(mine)
    end
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    lines = site.log.lines
    queued = lines.index { |l| l.include?("capture of worker honest (pid #{honest.pid}) queued") }
    refute_nil queued, "the honest worker did not wait: the attacker's plans were over (no test)"
    start = lines.index { |l| l.include?(mine) }
    ahead = lines[queued...start].grep(/Notification: severity = WARNING.*message = capture of worker hog-.*: capture started/)
    puts format("honest worker: capture started %.1f s after it started, %d of the attacker's plans " \
                "started while it waited (StepTimeout %d s)", waited, ahead.size, STEP_TIMEOUT)
    assert_operator ahead.size, :<=, 1, ahead.join
    # one plan per process: the other names of each process were refused, saying why
    attackers.each do |a|
      skipped = site.log.scan(/capture of worker (#{a.name}-\d) \(pid #{a.pid}\) skipped \([^)]*\): a capture plan already (?:runs|waits) for this process \(pid #{a.pid}, connection \d+\): one plan per process/)
      assert_equal NAMES - 1, skipped.uniq.size, site.log
    end
    took = Security.stop_seconds(site)
    refute_nil took, "collectd still ran 60 s after SIGTERM"
    assert_operator took, :<, 15
  end
end
