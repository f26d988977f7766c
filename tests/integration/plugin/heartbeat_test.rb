# The plugin answers every worker heartbeat, so a worker can tell a live
# plugin from one that is stopped but keeps its socket open: a hooked Ruby
# worker whose collectd is SIGSTOPped for longer than three heartbeat
# intervals gives up on that connection and, once collectd runs again,
# registers under a new connection ID (memdiagctl workers shows it).
require_relative "helper"

class HeartbeatTest < PluginTest::Case
  WORK = '$stdout.sync = true; n = 0; loop { n += 1; puts "work #{n}"; sleep 0.1 }'

  # The connection ID memdiagctl workers lists for pid, or nil.
  def ctl_id(pid)
    r = site.ctl("workers", "--json")
    return nil unless r.ok?

    JSON.parse(r.out).find { |w| w["pid"] == pid }&.fetch("connection_id")
  end

  def work_done(w) = w.output.lines.grep(/^work /).size

  def test_heartbeat
    start

    # each heartbeat comes back with its sequence number
    beater = site.test_worker("beater", "--show-heartbeats")
    site.wait_welcomed(beater)
    wait("3 heartbeats answered:\n#{beater.output}") { beater.heartbeats.size >= 3 }
    answers = beater.heartbeats.first(3)
    puts answers
    assert_equal (1..3).map { |i| "heartbeat back sequence=#{i}" }, answers.map { |l| l.sub(/ sent=.*/, "") },
                 "answers do not echo the worker's sequence"

    # a Ruby worker leaves a stopped collectd and registers again after it resumes
    patient = site.start_worker("patient", code: WORK, stderr: true)
    old = wait("the Ruby worker registers") { ctl_id(patient.pid) }
    puts "registered as connection #{old}; stopping collectd"
    Process.kill("STOP", site.collectd_pid)
    begin
      work_at_stop = work_done(patient)
      wait("the worker notices the stopped plugin") do
        patient.errors.match?(/plugin silent for \d+ ms on connection #{old}; reconnecting/)
      end
      work_then = work_done(patient)
    ensure
      Process.kill("CONT", site.collectd_pid)
    end
    puts "collectd resumed"

    new = wait("the worker registers again") { (id = ctl_id(patient.pid)) && id != old && id }
    puts "registered again as connection #{new}"
    assert_operator new, :>, old, "the new connection ID is not newer"
    assert_match(/connected to .* as connection #{new}/, patient.errors, "reconnection not logged")
    assert_operator patient.errors.scan("plugin silent for").size, :>=, 1, "silence not logged"

    # The worker's own loop ran while its plugin was stopped and still runs.
    assert_operator work_then, :>, work_at_stop, "the worker did no work while collectd was stopped"
    wait("the worker keeps working") { work_done(patient) > work_then }
    assert patient.alive?, "the Ruby worker died"
    puts patient.errors
    assert_collectd_alive
  end
end
