# The server loop is fair (issue 12 item 2): a worker that sends heartbeats
# without pause takes no more than its share of each loop turn, so another
# worker's heartbeats are still answered before its next one is due, and a
# new operator connection is accepted and answered.
#
# "Within one interval" is read off the worker, not a clock: md-test-worker
# --show-heartbeats prints "heartbeat back sequence=S sent=N" where N counts
# the heartbeats it had sent when the answer arrived; N == S means the
# answer came before the next heartbeat (one interval later) was sent.
require_relative "../harness/harness"

class FairnessTest < Minitest::Test
  FLOOD_PEER = E2E.setting("MEMDIAG_FLOOD_PEER")

  def site = E2E::SharedSite.get("fairness", config: 'HeartbeatInterval "1s"')

  def answers(w) = w.heartbeats.map { |l| l.scan(/\d+/).map(&:to_i) }

  def flood
    out = File.join(site.dir, "flooder.out")
    pid = Process.spawn(FLOOD_PEER, site.socket, site.cert("worker"), site.key("worker"), site.ca,
                        out: [out, "w"], err: [:child, :out])
    site.adopt(pid)
    site.wait_until("the flooder registers and floods") { File.read(out).include?("flooding") }
    [pid, out]
  end

  def alive?(pid) = Process.waitpid(pid, Process::WNOHANG).nil?

  def test_a_flooding_peer_leaves_room_for_others
    beater = site.test_worker("beater", "--show-heartbeats")
    site.wait_until("beater's first two heartbeats are answered") { answers(beater).size >= 2 }

    flood_pid, flood_out = flood
    before = answers(beater).size
    # Five intervals of flood: each of beater's heartbeats in them answered.
    site.wait_until("five more of beater's heartbeats are answered during the flood") do
      answers(beater).size >= before + 5
    end
    assert alive?(flood_pid), "the flooder stopped: #{File.read(flood_out)}"
    late = answers(beater).drop(before).reject { |seq, sent| seq == sent }
    assert_empty late, "answers that came after the next heartbeat was sent ([sequence, sent])"

    r = site.ctl("workers")
    assert r.ok?, "memdiagctl workers during the flood: #{r}"
    assert_match(/beater/, r.out)
    assert_match(/flooder/, r.out)
    assert alive?(flood_pid), "the flooder stopped: #{File.read(flood_out)}"
  end
end
