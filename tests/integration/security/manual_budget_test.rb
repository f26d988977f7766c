# Issue 24: a manual dump the plugin stores (`memdiagctl memory_dump` without
# a path) had no budget: a worker that streams without end filled the
# capture file system until ENOSPC. Now it has a capture's budget: twice
# the worker's RSS x DumpSpaceFactor from the worker, the room beyond
# KeepFree, KeepFree checked again as the file grows; past it the stream is
# cancelled, the file removed and the operator told so. With less than
# KeepFree and the dump's estimate free, it is refused before it starts.
require_relative "helper"

class SecurityManualBudgetTest < Capture::Test
  TMPFS = 300 * Security::MiB

  include Security::Tmpfs

  def setup
    tmpfs_bench("sec-manual-budget", TMPFS, Security.keys + <<~KEYS)
      DumpCompression none
      DumpSpaceFactor 1
      KeepFree "#{name.include?("no_room") ? "1G" : "100M"}"
    KEYS
  end

  def test_endless_manual_dump_is_cut_at_its_budget
    site = @bench.site
    w = Security.attacker(@bench, "stream", "--allocate-mb", "16")
    id = @bench.connection_id(w)
    rss = nil
    site.wait_until("the attacker's RSS is sampled") do
      rss = site.workers_json.find { |x| x["connection_id"] == id }&.dig("rss").to_i
      rss.positive?
    end
    base = Security.fs_used(@bench.captures)
    most = 0
    r = nil
    t = Thread.new { r = site.ctl("memory_dump", "connection_id=#{id}", "--timeout", "60") }
    most = [most, Security.fs_used(@bench.captures) - base].max while t.join(0.05).nil?
    most = [most, Security.fs_used(@bench.captures) - base].max
    budget = 2 * rss
    puts "manual dump of a worker streaming without end (RSS #{rss}): at most #{most} bytes on the " \
         "capture file system, budget #{budget} (2 x RSS x DumpSpaceFactor 1), tmpfs #{TMPFS}, KeepFree 100M"
    refute r.ok?, r.to_s
    assert_match(/heap\.json is over its budget/, r.out + r.err)
    assert_operator most, :<=, budget + 8 * Security::MiB, "the stream took more than its budget"
    leftovers = Dir.glob(File.join(@bench.captures, "manual", "*", "*"))
    assert_empty leftovers, "a file of the cut stream was left behind"
    assert site.ctl("workers").ok?
  end
  # A worker that ignores the cancel and goes on sending (past its credit,
  # never a Reply) kept the operator waiting for the request's time limit
  # (a day for memdiagctl memory_dump without --timeout; an hour here): the
  # relay kept the request until the worker's Reply. Now the operator is
  # answered a short grace after the cancel, and what the worker still
  # sends is dropped: its connection stays and it answers a ping.
  def test_the_operator_is_answered_though_the_worker_streams_on_after_the_cancel
    site = @bench.site
    w = Security.attacker(@bench, "stream", "--allocate-mb", "16", "--flood", "1")
    id = @bench.connection_id(w)
    site.wait_until("the attacker's RSS is sampled") do
      site.workers_json.find { |x| x["connection_id"] == id }&.dig("rss").to_i.positive?
    end
    out = File.join(site.dir, "ctl-dump.out")
    ctl = Process.spawn(site.operator_env, E2E::CTL, "memory_dump", "connection_id=#{id}", "--timeout", "3600",
                        out: [out, "w"], err: [:child, :out])
    site.wait_until("the plugin cancels the stream", timeout: 120) { w.output.include?("cancel ignored") }
    cancelled = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # 60 s is only a bound on a test that would otherwise wait an hour
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
    status = nil
    while (status = Process.waitpid2(ctl, Process::WNOHANG)&.last).nil? &&
          Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      sleep 0.1
    end
    answer = File.read(out)
    puts format("after the cancel the attacker went on sending; the operator read, %.1f s after the cancel " \
                "was seen: %s", Process.clock_gettime(Process::CLOCK_MONOTONIC) - cancelled, answer.strip)
    refute_nil status, "the operator had no answer 60 s after the cancel of a stream the worker kept sending"
    refute status.success?, answer
    assert_match(/heap\.json is over its budget/, answer)
    assert_match(/did not end its stream within 5 s of the cancel/, answer)
    sleep 1 # the attacker floods on meanwhile
    assert w.alive?, "the attacker lost its connection:\n#{w.output}"
    assert site.ctl("ping", "connection_id=#{id}").ok?, "the flooding worker's connection was lost"
    assert_empty Dir.glob(File.join(@bench.captures, "manual", "*", "*")), "a file of the cut stream was left behind"
    assert site.collectd_alive?
  ensure
    if ctl && status.nil?
      Process.kill(:KILL, ctl)
      Process.waitpid(ctl)
    end
  end

  def test_no_room_is_refused
    w = Security.attacker(@bench, "stream", "--allocate-mb", "16")
    r = @bench.site.ctl("memory_dump", "connection_id=#{@bench.connection_id(w)}", "--timeout", "60")
    refute r.ok?, r.to_s
    assert_match(/not enough free space in \S+ for a manual dump: it needs [\d.]+ MiB \(RSS [\d.]+ MiB x DumpSpaceFactor 1.0\) \+ KeepFree 1024.0 MiB, [\d.]+ MiB available/, r.out + r.err)
    refute_match(/request op=/, w.output, "the worker was asked for a dump")
  end
end
